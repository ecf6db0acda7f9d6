package unix

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// sleeper starts a "sleep" helper, waits until it runs, and returns it with
// its Ref.
func sleeper(t *testing.T, role string) (*exec.Cmd, Ref) {
	t.Helper()
	rp := newReadyPipe(t)
	cmd := startHelper(t, role, helperOpts{tag: "p", ready: rp})
	return cmd, rp.wait(t, "p")["p"]
}

func TestOpenHandle(t *testing.T) {
	_, r := sleeper(t, "sleep")
	h := openHandle(t, r)
	if h.Ref() != r {
		t.Errorf("Ref() = %+v, want %+v", h.Ref(), r)
	}
	if err := h.Signal(0); err != nil {
		t.Errorf("Signal(0) to a live process: %v", err)
	}
}

// A Ref whose start time differs names another process that once had (or
// will have) the same pid: as after PID reuse, it must not be opened.
func TestOpenHandleRefusesReusedPid(t *testing.T) {
	_, r := sleeper(t, "sleep")
	for _, start := range []uint64{r.Start + 1, r.Start - 1, 0} {
		h, err := OpenHandle(Ref{Pid: r.Pid, Start: start})
		if !errors.Is(err, ErrNoProcess) {
			if h != nil {
				h.Close()
			}
			t.Errorf("OpenHandle(pid %d, start %d; real start %d) = %v, want ErrNoProcess", r.Pid, start, r.Start, err)
		}
	}
	if _, err := OpenHandle(Ref{Pid: 1 << 30}); !errors.Is(err, ErrNoProcess) {
		t.Errorf("OpenHandle(nonexistent pid) = %v, want ErrNoProcess", err)
	}
}

func TestHandleSignalAfterExit(t *testing.T) {
	cmd, r := sleeper(t, "sleep")
	h := openHandle(t, r)
	if err := h.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(SIGKILL): %v", err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want killed by SIGKILL", err)
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if err := h.Signal(sig); !errors.Is(err, ErrNoProcess) {
			t.Errorf("Signal(%v) after the process was reaped = %v, want ErrNoProcess", sig, err)
		}
	}
}

// An exited process that its parent has not reaped yet has exited all the
// same: Signal documents ErrNoProcess for it, as Alive and WaitExit count a
// zombie as dead.
func TestHandleSignalZombie(t *testing.T) {
	_, r := sleeper(t, "sleep")
	h := openHandle(t, r)
	if err := h.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(SIGKILL): %v", err)
	}
	testproc.Eventually(t, waitLimit, func() bool {
		p, err := Stat(r.Pid)
		return err == nil && p.Zombie()
	}, "timed out after %v waiting for the helper to become a zombie", waitLimit)
	if err := h.Signal(syscall.SIGTERM); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Signal(SIGTERM) to an exited, unreaped process = %v, want ErrNoProcess", err)
	}
}

func TestWaitExitWakesOnExit(t *testing.T) {
	_, ra := sleeper(t, "sleep")
	_, rb := sleeper(t, "sleep")
	hs := []*Handle{openHandle(t, ra), openHandle(t, rb)}

	const timeout = 30 * time.Second
	type result struct {
		done []int
		err  error
		took time.Duration
	}
	res := make(chan result, 1)
	go func() {
		start := time.Now()
		done, err := WaitExit(hs, timeout)
		res <- result{done, err, time.Since(start)}
	}()
	// Give WaitExit a chance to be asleep in poll before the exit; it
	// must report it either way.
	time.Sleep(20 * time.Millisecond)
	if err := hs[1].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.err != nil || len(r.done) != 1 || r.done[0] != 1 {
			t.Fatalf("WaitExit = %v, %v; want [1], nil", r.done, r.err)
		}
		if r.took >= timeout/2 {
			t.Fatalf("WaitExit took %v: it did not wake on the exit", r.took)
		}
	case <-time.After(waitLimit):
		t.Fatalf("WaitExit did not return %v after the exit", waitLimit)
	}
}

func TestWaitExitTimeout(t *testing.T) {
	_, r := sleeper(t, "sleep")
	hs := []*Handle{openHandle(t, r)}
	for _, timeout := range []time.Duration{0, 50 * time.Millisecond} {
		start := time.Now()
		done, err := WaitExit(hs, timeout)
		took := time.Since(start)
		if err != nil || len(done) != 0 {
			t.Errorf("WaitExit(live, %v) = %v, %v; want none, nil", timeout, done, err)
		}
		// poll(2) takes whole milliseconds: allow one of rounding.
		if took < timeout-time.Millisecond || took > timeout+5*time.Second {
			t.Errorf("WaitExit(live, %v) returned after %v", timeout, took)
		}
	}
	if done, err := WaitExit(nil, time.Hour); done != nil || err != nil {
		t.Errorf("WaitExit(no handles) = %v, %v; want nil, nil at once", done, err)
	}
}

// A zombie has exited: WaitExit reports it at once.
func TestWaitExitZombie(t *testing.T) {
	_, r := sleeper(t, "sleep")
	h := openHandle(t, r)
	if err := h.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, waitLimit, func() bool {
		p, err := Stat(r.Pid)
		return err == nil && p.Zombie()
	}, "timed out after %v waiting for the helper to become a zombie", waitLimit)
	done, err := WaitExit([]*Handle{h}, waitLimit)
	if err != nil || len(done) != 1 || done[0] != 0 {
		t.Errorf("WaitExit(zombie) = %v, %v; want [0], nil", done, err)
	}
	if Alive(r) {
		t.Errorf("Alive(zombie) = true")
	}
}
