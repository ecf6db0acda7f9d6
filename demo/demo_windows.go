package demo

import (
	"fmt"
	"os"
)

// Run reports that the crash demo, which SIGKILLs processes and reads
// /proc, runs on Linux and macOS only; the demo agent (Agent) runs here.
func Run(args []string) int {
	fmt.Fprintln(os.Stderr, "tether demo: the crash demo is not available on Windows in this version")
	return 1
}
