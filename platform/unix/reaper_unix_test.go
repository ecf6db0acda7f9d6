//go:build unix

package unix

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// newTestReaper starts the process's one Reaper. When the test ends every
// child must have been reaped; then the Reaper is closed.
func newTestReaper(t *testing.T) *Reaper {
	t.Helper()
	r := NewReaper()
	t.Cleanup(func() {
		waitNoChildren(t)
		r.Close()
	})
	return r
}

// waitNoChildren waits until the test process has no child left, live or
// zombie: everything it started or adopted is gone and reaped.
func waitNoChildren(t *testing.T) {
	t.Helper()
	var left []Proc
	if !testproc.Until(waitLimit, func() bool {
		procs, err := Processes()
		if err != nil {
			t.Fatal(err)
		}
		left = nil
		for _, p := range procs {
			if p.PPid == os.Getpid() {
				left = append(left, p)
			}
		}
		return len(left) == 0
	}) {
		t.Errorf("children left after %v: %+v", waitLimit, left)
	}
}

func receive(t *testing.T, what string, ch <-chan ExitStatus) ExitStatus {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-time.After(waitLimit):
		t.Fatalf("no exit status for %s after %v", what, waitLimit)
		return ExitStatus{}
	}
}

// TestReaper runs alone in a subprocess: a Reaper reaps every child of its
// process, so nothing else there may wait for one.
func TestReaper(t *testing.T) {
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)

	// The child has exited, and the Reaper has had every chance to reap
	// it, before Start even returns: its status still arrives.
	t.Run("immediate exit", func(t *testing.T) {
		for code := range 6 {
			pid, ch, err := r.Start(func() (int, error) {
				pid, err := startSession(t, "exit", helperOpts{args: []string{strconv.Itoa(code)}}, nil)
				if err != nil {
					return 0, err
				}
				if !testproc.Until(waitLimit, func() bool {
					p, err := Stat(pid)
					return errors.Is(err, ErrNoProcess) || err == nil && p.Zombie()
				}) {
					return pid, errors.New("the child did not exit")
				}
				return pid, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if st := receive(t, "pid "+strconv.Itoa(pid), ch); st != (ExitStatus{Code: code}) {
				t.Errorf("exit %d: status %+v", code, st)
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				code := 10 + i
				pid, ch, err := r.Start(func() (int, error) {
					return startSession(t, "exit", helperOpts{args: []string{strconv.Itoa(code)}}, nil)
				})
				if err != nil {
					t.Error(err)
					return
				}
				select {
				case st := <-ch:
					if st != (ExitStatus{Code: code}) {
						t.Errorf("pid %d exit %d: status %+v", pid, code, st)
					}
				case <-time.After(waitLimit):
					t.Errorf("pid %d: no status", pid)
				}
			})
		}
		wg.Wait()
	})

	t.Run("signalled", func(t *testing.T) {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			ref, ch := startSleeper(t, r)
			h, err := OpenHandle(ref)
			if err != nil {
				t.Fatal(err)
			}
			err = h.Signal(sig)
			h.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st := receive(t, sig.String(), ch); st != (ExitStatus{Code: -1, Signal: sig}) {
				t.Errorf("killed by %v: status %+v", sig, st)
			}
		}
	})

	// ReapNow and ReapAll say whether a child is left; the kernel's answer
	// covers every descendant of a subreaper.
	t.Run("children left", func(t *testing.T) {
		waitNoChildren(t)
		if r.ReapNow() {
			t.Errorf("ReapNow() = true with no child")
		}
		if !r.ReapAll(0) {
			t.Errorf("ReapAll(0) = false with no child")
		}
		ref, ch := startSleeper(t, r)
		if !r.ReapNow() {
			t.Errorf("ReapNow() = false with a live child")
		}
		start := time.Now()
		if r.ReapAll(50 * time.Millisecond) {
			t.Errorf("ReapAll = true with a live child")
		}
		if took := time.Since(start); took < 50*time.Millisecond {
			t.Errorf("ReapAll gave up after %v, before 50ms", took)
		}
		h := openHandle(t, ref)
		if err := h.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !r.ReapAll(waitLimit) {
			t.Errorf("ReapAll = false after the only child was killed")
		}
		// Whoever reaped it, the status reached its waiter.
		if st := receive(t, "the killed child", ch); st != (ExitStatus{Code: -1, Signal: syscall.SIGKILL}) {
			t.Errorf("status %+v, want killed by SIGKILL", st)
		}
	})

	t.Run("spawn error", func(t *testing.T) {
		boom := errors.New("boom")
		pid, ch, err := r.Start(func() (int, error) { return 0, boom })
		if !errors.Is(err, boom) || pid != 0 || ch != nil {
			t.Errorf("Start(failing spawn) = %d, %v, %v", pid, ch, err)
		}
	})

	// A double-forked process comes back to the subreaper when its parent
	// exits, and the Reaper reaps it like any child: no zombie stays.
	t.Run("orphans", func(t *testing.T) {
		if !subreaper {
			t.Skip("no child subreaper on this system")
		}
		rp := newReadyPipe(t)
		_, ch, err := r.Start(func() (int, error) {
			return startSession(t, "middle", helperOpts{args: []string{"sleep", "orphan"}, ready: rp}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if st := receive(t, "the middle process", ch); st != (ExitStatus{}) {
			t.Errorf("middle process: status %+v", st)
		}
		orphan := rp.wait(t, "orphan")["orphan"]
		testproc.Eventually(t, waitLimit, func() bool {
			p, err := Stat(orphan.Pid)
			return err == nil && p.PPid == os.Getpid()
		}, "timed out after %v waiting for the orphan to be adopted", waitLimit)
		h, err := OpenHandle(orphan)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if err := h.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, waitLimit, func() bool {
			_, err := Stat(orphan.Pid)
			return errors.Is(err, ErrNoProcess)
		}, "timed out after %v waiting for the orphan to be reaped", waitLimit)
		// Several at once, exiting by themselves.
		for i := range 4 {
			_, ch, err := r.Start(func() (int, error) {
				return startSession(t, "middle", helperOpts{args: []string{"exit", strconv.Itoa(i)}}, nil)
			})
			if err != nil {
				t.Fatal(err)
			}
			receive(t, "a middle process", ch)
		}
		waitNoChildren(t)
	})
}

// startSleeper starts a sleeping helper through r and waits until it runs.
func startSleeper(t *testing.T, r *Reaper) (Ref, <-chan ExitStatus) {
	t.Helper()
	rp := newReadyPipe(t)
	_, ch, err := r.Start(func() (int, error) {
		return startSession(t, "sleep", helperOpts{tag: "p", ready: rp}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rp.wait(t, "p")["p"], ch
}
