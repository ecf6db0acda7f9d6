//go:build darwin

package unix

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handle refers to one process by PID and start time. Without pidfds the
// start time is checked immediately before each signal.
type Handle struct {
	ref Ref
}

// OpenHandle checks that r still names a live process.
func OpenHandle(r Ref) (*Handle, error) {
	p, err := Stat(r.Pid)
	if err != nil || p.Start != r.Start {
		return nil, ErrNoProcess
	}
	return &Handle{ref: r}, nil
}

// Ref returns the process this handle refers to.
func (h *Handle) Ref() Ref { return h.ref }

// Signal sends sig after checking that the PID was not reused.
func (h *Handle) Signal(sig syscall.Signal) error {
	p, err := Stat(h.ref.Pid)
	if err != nil || p.Start != h.ref.Start {
		return ErrNoProcess
	}
	if err := unix.Kill(h.ref.Pid, sig); err == unix.ESRCH {
		return ErrNoProcess
	} else {
		return err
	}
}

// Close is a no-op without pidfds.
func (h *Handle) Close() error { return nil }

// ReleaseMemory does nothing: macOS has no call for it; a killed process
// frees its memory as it exits.
func (h *Handle) ReleaseMemory() error { return nil }

// WaitExit waits until at least one of hs has exited or the timeout
// passes. Without pidfds it checks every few milliseconds; it is only
// used while a tree is being stopped.
func WaitExit(hs []*Handle, timeout time.Duration) ([]int, error) {
	deadline := time.Now().Add(timeout)
	for {
		var done []int
		for i, h := range hs {
			if !Alive(h.ref) {
				done = append(done, i)
			}
		}
		if len(done) > 0 || len(hs) == 0 || !time.Now().Before(deadline) {
			return done, nil
		}
		time.Sleep(min(5*time.Millisecond, time.Until(deadline)))
	}
}
