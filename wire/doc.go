// Package wire is the vocabulary of the guardian protocol, the JSON lines
// on the tether between a guardian and its owner: the protocol's Version,
// the message types, the bodies of the guardian's answers (Ready, Failure,
// Exit, Cleanup, Waiting), the closed sets of codes and reasons they carry,
// and the Containment rungs. The guardian speaks it, the service reads it
// and shows it through the local API, and a client asks a guardian that
// waits to be adopted who it is (Query) at its socket in AdoptDir.
//
// The message envelope and the start request, which carries an agent's
// readiness checks, are the guardian's (package guardian, protocol.go).
// This package holds types and codecs only: it starts, dials and locks
// nothing.
package wire
