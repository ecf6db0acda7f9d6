//go:build windows

package windows

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/windows"
)

// ErrNoProcess reports that a process does not exist, or exists with a
// different creation time than expected (its PID was reused).
var ErrNoProcess = errors.New("no such process")

// Ref names a process across PID reuse: a PID together with its creation
// time (a FILETIME, 100 ns units since 1601).
type Ref struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Process is an open handle on a process, from StartInJob or OpenProcess.
type Process struct {
	Pid   int
	Start uint64
	h     windows.Handle

	exitOnce sync.Once
	exited   chan struct{}
	cancel   windows.Handle // set to end the exit watch on Close
	closed   sync.Once
	watching sync.WaitGroup
}

// processAccess is what tether needs of a process it did not start: to
// wait for it, read its times and exit code, and end it.
const processAccess = windows.SYNCHRONIZE | windows.PROCESS_QUERY_LIMITED_INFORMATION | windows.PROCESS_TERMINATE

// OpenProcess opens the process r names. It fails with ErrNoProcess when
// no process has r's PID and creation time, or when it has exited.
func OpenProcess(r Ref) (*Process, error) {
	if r.Pid <= 0 {
		return nil, ErrNoProcess
	}
	h, err := windows.OpenProcess(processAccess, false, uint32(r.Pid))
	if err != nil {
		// Fall back to what waiting needs: a process of another user
		// may refuse PROCESS_TERMINATE.
		h, err = windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(r.Pid))
	}
	if err != nil {
		if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
			return nil, ErrNoProcess
		}
		return nil, fmt.Errorf("opening pid %d: %w", r.Pid, err)
	}
	p := newProcess(r.Pid, h)
	if r.Start != 0 && p.Start != r.Start {
		p.Close()
		return nil, ErrNoProcess
	}
	if ev, _ := windows.WaitForSingleObject(h, 0); ev == windows.WAIT_OBJECT_0 {
		p.Close()
		return nil, ErrNoProcess
	}
	return p, nil
}

func newProcess(pid int, h windows.Handle) *Process {
	p := &Process{Pid: pid, h: h, exited: make(chan struct{})}
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(h, &creation, &exit, &kernel, &user) == nil {
		p.Start = uint64(creation.HighDateTime)<<32 | uint64(creation.LowDateTime)
	}
	return p
}

// RefOf returns the reference of the live process pid.
func RefOf(pid int) (Ref, error) {
	p, err := OpenProcess(Ref{Pid: pid})
	if err != nil {
		return Ref{}, err
	}
	defer p.Close()
	return p.Ref(), nil
}

// Alive reports whether the process r names still runs.
func Alive(r Ref) bool {
	p, err := OpenProcess(r)
	if err != nil {
		return false
	}
	p.Close()
	return true
}

// Ref returns the process's reference.
func (p *Process) Ref() Ref { return Ref{Pid: p.Pid, Start: p.Start} }

// Handle returns the process handle, valid until Close.
func (p *Process) Handle() windows.Handle { return p.h }

// Exited returns a channel closed when the process exits. The first call
// starts a goroutine that waits in the kernel (it wakes for nothing else)
// until the exit or Close.
func (p *Process) Exited() <-chan struct{} {
	p.exitOnce.Do(func() {
		ev, err := windows.CreateEvent(nil, 1, 0, nil)
		if err != nil {
			// Without a cancel event the wait cannot be ended early;
			// a plain wait still reports the exit.
			ev = 0
		}
		p.cancel = ev
		hs := []windows.Handle{p.h}
		if ev != 0 {
			hs = append(hs, ev)
			p.watching.Add(1)
		}
		go func() {
			if ev != 0 {
				defer p.watching.Done()
			}
			r, _ := windows.WaitForMultipleObjects(hs, false, windows.INFINITE)
			if r == windows.WAIT_OBJECT_0 {
				close(p.exited)
			}
		}()
	})
	return p.exited
}

// ExitCode returns the process's exit code, and false while it runs.
func (p *Process) ExitCode() (uint32, bool) {
	if ev, _ := windows.WaitForSingleObject(p.h, 0); ev != windows.WAIT_OBJECT_0 {
		return 0, false
	}
	var code uint32
	if windows.GetExitCodeProcess(p.h, &code) != nil {
		return 0, false
	}
	return code, true
}

// Kill ends the process at once (TerminateProcess) with exit code 1.
// Killing a process that has exited is not an error.
func (p *Process) Kill() error {
	if _, done := p.ExitCode(); done {
		return nil
	}
	if err := windows.TerminateProcess(p.h, 1); err != nil {
		if _, done := p.ExitCode(); done {
			return nil
		}
		return fmt.Errorf("terminating pid %d: %w", p.Pid, err)
	}
	return nil
}

// Close ends the exit watch, if any, and closes the handle.
func (p *Process) Close() {
	p.closed.Do(func() {
		if p.cancel != 0 {
			windows.SetEvent(p.cancel)
		}
		p.watching.Wait()
		if p.cancel != 0 {
			windows.CloseHandle(p.cancel)
		}
		windows.CloseHandle(p.h)
	})
}
