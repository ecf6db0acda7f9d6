//go:build !unix && !windows

package service

import (
	"fmt"
	"io"
	"runtime"
)

// Run reports that this system has neither a guardian nor a local API
// transport.
func Run(p Paths, exe, version string, stderr io.Writer) int {
	fmt.Fprintf(stderr, "tether service run: not available on %s\n", runtime.GOOS)
	return 1
}
