//go:build darwin

package upgrade

import (
	"os"
	"syscall"
)

// stopSelf stops this process (a test's handover step).
func stopSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
