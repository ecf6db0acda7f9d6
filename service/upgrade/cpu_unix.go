//go:build unix

package upgrade

import (
	"time"

	"golang.org/x/sys/unix"
)

// ProcessCPU is the CPU time this process has used (user and system, all
// its threads). An execve keeps it: a successor's steps go on from the
// service's.
func ProcessCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
