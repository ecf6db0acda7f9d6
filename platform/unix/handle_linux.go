package unix

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handle refers to one process through a pidfd, so a signal sent through it
// can never reach a process that later reuses the PID.
type Handle struct {
	ref Ref
	fd  int
}

// OpenHandle opens a pidfd for r and checks, after opening, that the PID
// still belongs to the process started at r.Start. It returns ErrNoProcess
// when the process is gone or the PID was reused.
func OpenHandle(r Ref) (*Handle, error) {
	fd, err := unix.PidfdOpen(r.Pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, ErrNoProcess
		}
		return nil, err
	}
	p, err := Stat(r.Pid)
	if err != nil || p.Start != r.Start {
		unix.Close(fd)
		return nil, ErrNoProcess
	}
	return &Handle{ref: r, fd: fd}, nil
}

// Ref returns the process this handle refers to.
func (h *Handle) Ref() Ref { return h.ref }

// Signal sends sig to the process. A process that has exited yields
// ErrNoProcess.
func (h *Handle) Signal(sig syscall.Signal) error {
	// The kernel accepts signals for a zombie; a readable pidfd means
	// the process has exited.
	if n, _ := unix.Poll([]unix.PollFd{{Fd: int32(h.fd), Events: unix.POLLIN}}, 0); n > 0 {
		return ErrNoProcess
	}
	err := unix.PidfdSendSignal(h.fd, sig, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return ErrNoProcess
	}
	return err
}

// ReleaseMemory frees, in the caller's time, the memory of the process,
// which must have been sent SIGKILL (process_mrelease(2), Linux 5.15): its
// exit then costs the kernel little once the process is scheduled, where
// freeing a large address space would otherwise wait for the dying
// process to run, behind everything else on a loaded machine. An error
// (an older kernel, a process already gone) changes nothing: the process
// frees its memory itself as it exits.
func (h *Handle) ReleaseMemory() error {
	_, _, errno := unix.Syscall(unix.SYS_PROCESS_MRELEASE, uintptr(h.fd), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Close releases the pidfd.
func (h *Handle) Close() error { return unix.Close(h.fd) }

// WaitExit blocks until at least one of hs has exited (a zombie counts) or
// the timeout passes, and returns the indexes of those that have exited.
// It sleeps in poll(2): nothing wakes it but an exit or the timeout.
func WaitExit(hs []*Handle, timeout time.Duration) ([]int, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	fds := make([]unix.PollFd, len(hs))
	for i, h := range hs {
		fds[i] = unix.PollFd{Fd: int32(h.fd), Events: unix.POLLIN}
	}
	deadline := time.Now().Add(timeout)
	for {
		// ppoll, to the nanosecond: poll's milliseconds, rounded down,
		// would return early and then spin on a timeout of 0 until the
		// deadline, which hundreds of guardians with the same deadline
		// (their owner died) would do all at once.
		ts := unix.NsecToTimespec(max(int64(time.Until(deadline)), 0))
		n, err := unix.Ppoll(fds, &ts, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var done []int
		if n > 0 {
			for i, f := range fds {
				if f.Revents != 0 {
					done = append(done, i)
				}
			}
		}
		return done, nil
	}
}
