// Package demo is tether's self-contained crash-survival demonstration and
// the demo agent built into the binary. It runs real services in a
// throwaway directory (its own XDG directories) and touches nothing of the
// user's.
//
// The crash demo (Run) runs on Linux and macOS; the demo agent (Agent)
// everywhere. Only the command line imports it; it drives the services it
// starts as any client would (package api and the command line), and reads
// their process trees and locks through the Unix platform package.
package demo
