//go:build unix

package unix

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ExitStatus is how a process ended: an exit code, or the signal that
// killed it.
type ExitStatus struct {
	Code   int            // exit code; -1 when killed by a signal
	Signal syscall.Signal // 0 unless killed by a signal
}

func exitStatus(ws unix.WaitStatus) ExitStatus {
	if ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}

// Reaper reaps every child of the process, including orphans adopted as a
// child subreaper, and hands the exit status of the children it was asked
// to watch to their waiters. It is driven by SIGCHLD alone: while nothing
// exits it never wakes. Only one Reaper may exist in a process, and nothing
// else in the process may wait for children (os/exec's Wait would race it
// for statuses).
type Reaper struct {
	mu      sync.Mutex
	watch   map[int]chan ExitStatus
	sigs    chan os.Signal
	quit    chan struct{}
	stopped chan struct{}

	// passMu guards pass, which is closed after each reaping pass of
	// the loop and replaced: WaitChildless wakes on it.
	passMu sync.Mutex
	pass   chan struct{}
}

// NewReaper starts reaping.
func NewReaper() *Reaper {
	r := &Reaper{
		watch:   make(map[int]chan ExitStatus),
		sigs:    make(chan os.Signal, 1),
		quit:    make(chan struct{}),
		stopped: make(chan struct{}),
		pass:    make(chan struct{}),
	}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go r.loop()
	return r
}

func (r *Reaper) loop() {
	defer close(r.stopped)
	r.reapAndTell()
	for {
		select {
		case <-r.sigs:
			r.reapAndTell()
		case <-r.quit:
			return
		}
	}
}

// reapAndTell reaps, then wakes whoever waits in WaitChildless.
func (r *Reaper) reapAndTell() {
	r.reap()
	r.passMu.Lock()
	close(r.pass)
	r.pass = make(chan struct{})
	r.passMu.Unlock()
}

// WaitChildless waits until the process has no child left, every exited
// one reaped, or until deadline, and reports whether none is left. Like
// the reaper itself it wakes on SIGCHLD, not on a timer: for a child
// subreaper the kernel's answer that no child is left means that no
// descendant is left at all, without a scan of /proc.
func (r *Reaper) WaitChildless(deadline time.Time) bool {
	for {
		// Taken before the check: an exit after it ends this pass
		// and wakes the wait.
		r.passMu.Lock()
		next := r.pass
		r.passMu.Unlock()
		if !r.reap() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-next:
		case <-t.C:
		}
		t.Stop()
	}
}

// ReapNow reaps every child that has exited so far and reports whether
// any child, necessarily a live one, is left. The kernel's answer is
// atomic, unlike a scan of /proc: a subreaper with no children has no
// descendants at all.
func (r *Reaper) ReapNow() (childrenLeft bool) {
	return r.reap()
}

// reap reaps what has exited and reports whether any child is left.
func (r *Reaper) reap() (childrenLeft bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return !errors.Is(err, unix.ECHILD)
		}
		if pid <= 0 {
			return true
		}
		r.mu.Lock()
		if ch, ok := r.watch[pid]; ok {
			ch <- exitStatus(ws)
			delete(r.watch, pid)
		}
		r.mu.Unlock()
	}
}

// ReapAll waits until the process has no children left, or within has
// passed, and reports whether none is left. A subreaper calls it before
// exiting: zombies it leaves would fall to its own parent, which may never
// reap them.
func (r *Reaper) ReapAll(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for r.reap() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// Start runs spawn, which must start one child and return its pid, and
// watches that child. Holding the reaper's lock across spawn and
// registration means an immediate exit cannot be reaped before anyone
// listens for it. The returned channel receives the child's status once.
func (r *Reaper) Start(spawn func() (int, error)) (int, <-chan ExitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := spawn()
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan ExitStatus, 1)
	r.watch[pid] = ch
	return pid, ch, nil
}

// Close stops reaping. Children that exit afterwards stay zombies until the
// process exits.
func (r *Reaper) Close() {
	signal.Stop(r.sigs)
	close(r.quit)
	<-r.stopped
}
