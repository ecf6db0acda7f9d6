// Package demo is tether's self-contained crash-survival demonstration and
// the demo agent built into the binary.
package demo

import (
	"fmt"
	"os"
)

// Run reports that the demo needs the Windows guardian, which this build
// does not have yet.
func Run(args []string) int {
	fmt.Fprintln(os.Stderr, "tether demo: not available on Windows in this version")
	return 1
}

// Agent reports the same for the demo agent.
func Agent(args []string) int { return Run(args) }
