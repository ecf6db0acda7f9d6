package unix

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Adopter looks after the orphans that come to a child subreaper: the
// descendants of a child that died before them, such as the tree of a
// guardian killed by SIGKILL, whose members left their session and closed
// every descriptor. It reaps those that exit and stops the rest on
// request. The process must start every child of its own through
// StartChild (and call ForgetChild once it has waited for it), so the
// Adopter never takes one of them for an orphan; it may use os/exec's Wait
// for those, but no Reaper, which would take every child.
type Adopter struct {
	sigs chan os.Signal
	quit chan struct{}
	done chan struct{}
}

// NewAdopter makes the calling process a child subreaper and starts
// reaping adopted children on each SIGCHLD.
func NewAdopter() (*Adopter, error) {
	if _, err := BecomeSubreaper(); err != nil {
		return nil, err
	}
	a := &Adopter{sigs: make(chan os.Signal, 1), quit: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(a.sigs, syscall.SIGCHLD)
	go a.loop()
	return a, nil
}

func (a *Adopter) loop() {
	defer close(a.done)
	a.reap()
	for {
		select {
		case <-a.sigs:
			a.reap()
		case <-a.quit:
			return
		}
	}
}

// reap reaps every adopted child that has exited. A live one is left as
// it is: wait4 with WNOHANG only takes a zombie.
func (a *Adopter) reap() {
	scanChildren(func() struct{} {
		kids, _ := childrenOf(os.Getpid())
		for _, pid := range kids {
			if ownChild(pid) {
				continue
			}
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.EINTR) {
					break
				}
			}
		}
		return struct{}{}
	})
}

// Adopted returns the live adopted processes and everything below them.
func (a *Adopter) Adopted() ([]Proc, error) { return adoptedProcs() }

// adoptedProcs walks below the calling process, leaving out the
// children it started itself and their trees, until walks agree.
func adoptedProcs() ([]Proc, error) {
	return adoptedScan(func() ([]Proc, error) { return stableWalk(os.Getpid(), ownChild) })
}

// adoptedWalk is adoptedProcs with one walk.
func adoptedWalk() ([]Proc, error) {
	return adoptedScan(func() ([]Proc, error) { return walkDescendants(os.Getpid(), ownChild) })
}

func adoptedScan(walk func() ([]Proc, error)) ([]Proc, error) {
	type result struct {
		procs []Proc
		err   error
	}
	r := scanChildren(func() result {
		procs, err := walk()
		return result{procs, err}
	})
	return r.procs, r.err
}

// Stop stops every adopted process and everything below it, as Tree.Stop
// stops a tree (SIGTERM, up to timeout, SIGSTOP and SIGKILL, up to
// grace), and reaps them. Until no adopted child is left at all, which
// the kernel answers atomically, it goes on: a process adopted in the
// middle of a walk can be missed by it. It returns a *TreeAliveError
// when some survive. found, when not nil, is called once for each
// process it finds, before it signals it.
func (a *Adopter) Stop(timeout, grace time.Duration, found func(Proc)) (StopReport, error) {
	t := &Tree{Root: os.Getpid(), RootSubreaper: true, adopted: true, found: found}
	var rep StopReport
	for i := 0; ; i++ {
		more, err := t.Stop(timeout, grace)
		rep.Terminated += more.Terminated
		rep.Killed += more.Killed
		rep.Forced = rep.Forced || more.Forced
		a.reap()
		if err != nil || !a.anyAdopted() || i == 20 {
			return rep, err
		}
	}
}

// anyAdopted reports whether any child that StartChild did not start is
// left, live or not yet reaped.
func (a *Adopter) anyAdopted() bool {
	return scanChildren(func() bool {
		kids, _ := childrenOf(os.Getpid())
		for _, pid := range kids {
			if !ownChild(pid) {
				return true
			}
		}
		return false
	})
}

// Close stops reaping; adopted children that exit afterwards stay
// zombies until the process exits.
func (a *Adopter) Close() {
	signal.Stop(a.sigs)
	close(a.quit)
	<-a.done
}

// scanChildren runs f with no start under way; f may call ownChild.
func scanChildren[T any](f func() T) T {
	own.starting.Lock()
	defer own.starting.Unlock()
	return f()
}

// ownChild reports whether pid is a child StartChild started.
func ownChild(pid int) bool {
	own.mu.Lock()
	defer own.mu.Unlock()
	return own.pids[pid] > 0
}
