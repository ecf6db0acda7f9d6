// Package top is the live terminal view of a profile's agents (tether
// top): one row per agent, updated from the local API's event stream,
// with keys to start, stop and restart the selected one. It is a client of
// the API only.
package top
