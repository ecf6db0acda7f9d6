package unix

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unmanagedSignals are the signals the Go runtime leaves as it found
// them on Linux: 32 and 33, which glibc keeps for its threads and a
// static Go program never uses. Every other signal the runtime handles,
// or os/signal can catch, and a handled signal is at its default action
// after an exec.
var unmanagedSignals = []uintptr{32, 33}

// DefaultUnmanagedSignals puts the signals the runtime leaves alone at
// their default action, so that a program this process starts does not
// inherit them ignored from whoever started this one (a launcher that
// spawns its children with them ignored, as GNU make does).
func DefaultUnmanagedSignals() error {
	// The kernel's struct sigaction, all zero whatever its layout:
	// SIG_DFL, no flags, an empty mask.
	var act [4]uint64
	for _, sig := range unmanagedSignals {
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("signal %d to its default action: %w", sig, e)
		}
	}
	return nil
}
