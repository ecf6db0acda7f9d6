//go:build !unix && !windows

package service

// RunningPID knows of no service where none can run.
func RunningPID(Paths) (pid int, ok bool) { return 0, false }
