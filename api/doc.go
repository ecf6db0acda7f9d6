// Package api will hold the local API's wire types and its client, shared
// by the tray and the command line. Not built yet.
package api
