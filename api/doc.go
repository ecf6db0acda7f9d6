// Package api holds the local API's wire types and its client, shared by
// the tray and the command line. The service serves these types over a
// user-only socket; this package owns no agent and imports nothing of the
// service.
package api
