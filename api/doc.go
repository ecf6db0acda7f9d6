// Package api is the local API's contract: its versioned paths, wire
// types, error codes and agent states, the client that speaks it, and where
// a profile's service listens (SocketPath: a unix socket, or a named pipe
// on Windows) and what a profile may be called (ValidateProfile).
//
// The service serves these types (service/localapi); the command line, the
// tray and the demo are its clients. It owns no agent and imports nothing
// of the service; on Windows it uses the platform package's pipe dial.
package api
