//go:build !unix

package service

import (
	"fmt"
	"io"
)

// Run reports that the service needs the Windows guardian and named-pipe
// API, which this build does not have yet.
func Run(p Paths, exe string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tether service run: not available on this platform in this version")
	return 1
}
