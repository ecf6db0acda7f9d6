// Package client speaks the local API (package api) to the service of
// one profile, over its user-only socket or named pipe: New returns a
// Client for the path api.SocketPath gives, which checks who listens
// there before it sends anything (platform.Dial). WaitingToBeAdopted asks
// the guardians that wait to be adopted while no service runs who they
// are (wire.Query).
//
// The command line, the tray, the demo and the tests are its callers.
package client
