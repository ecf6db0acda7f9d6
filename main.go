// Command tether keeps local agent sessions on a leash: one identity, one
// execution, and nothing left behind when its owner dies.
package main

import (
	"os"

	"github.com/tether-dev/tether/cli"
	"github.com/tether-dev/tether/internal/quietterm"
)

// The version is stamped into package internal/buildinfo at link time
// (make build, make dist).
func main() {
	// Before anything reads TERM: the package initializers ran with
	// the terminal asked nothing.
	quietterm.Restore()
	os.Exit(cli.Main(os.Args[1:]))
}
