// Package demo is tether's self-contained crash-survival demonstration and
// the demo agent built into the binary. It runs real services in a
// throwaway directory (its own XDG directories) and touches nothing of the
// user's.
//
// The crash demo (Run) runs on Linux and macOS; the demo agent (Agent)
// everywhere.
package demo
