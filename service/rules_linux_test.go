package service

import (
	"context"
	"fmt"
	"github.com/tether-dev/tether/internal/freezer"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// Stop attempts both the stop and the durable disable; when both fail,
// the cleanup error wins. An unconfirmed stop refuses shutdown once.
func TestStopErrorRulesAndShutdownRefusal(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    stop_timeout: 100ms
`)
	c := w.controller(Options{})
	a, err := c.Start(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	thaw := freezer.Freeze(t, a.PID)
	// Break the state file: the disable cannot be saved either.
	if err := os.WriteFile(filepath.Join(w.paths.StateDir, "state.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	row, err := c.Stop(ctx, "a")
	if !isCode(err, api.CodeCleanupFailed) {
		t.Fatalf("Stop: %v, want the cleanup error to win", err)
	}
	if row.State != api.StateCleanupFailed || row.Error == nil || row.Error.Code != api.CodeCleanupFailed {
		t.Fatalf("row %+v %+v", row, row.Error)
	}
	// The failure stays visible while the guardian retries.
	if r := c.row("a"); r.State != api.StateCleanupFailed {
		t.Fatalf("row %+v", r)
	}
	if err := c.Shutdown(ctx, false); err == nil || !strings.Contains(err.Error(), "a:") {
		t.Fatalf("first shutdown with an unconfirmed stop: %v, want a refusal naming a", err)
	}
	thaw()
	waitState(t, c, "a", api.StateStopped)
	if err := c.Shutdown(ctx, false); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	<-c.Done()
}

// A newer outcome replaces an older, unrelated error: contention, then
// the agent's own exit.
func TestNewerErrorReplacesOlder(t *testing.T) {
	a := newWorld(t, "first", nil)
	b := newWorld(t, "second", a)
	gate := filepath.Join(b.dir, "go")
	a.yaml(`  - id: x
    identity: shared
    command: AGENT, sleep]
`)
	b.yaml(fmt.Sprintf(`  - id: x
    identity: shared
    command: AGENT, exit-on, %q]
    restart: never
`, gate))
	ca := a.controller(Options{})
	cb := b.controller(Options{})
	if _, err := ca.Start(context.Background(), "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Start(context.Background(), "x", false); !isCode(err, api.CodeContention) {
		t.Fatalf("want contention, got %v", err)
	}
	if _, err := ca.Stop(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	waitState(t, cb, "x", api.StateRunning)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	row := waitState(t, cb, "x", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeExited {
		t.Fatalf("error %+v, want the exit to replace the contention", row.Error)
	}
}

// A guardian SIGKILLed in the middle of a stop leaves its tree (which
// ignores SIGTERM) holding the identity; the service reclaims it, and the
// tree gets what was left of its stop timeout, not a second one.
func TestGuardianKilledDuringStopIsReclaimed(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, stubborn]
    stop_timeout: 2s
    restart: never
`)
	c := w.controller(Options{})
	a, err := c.Start(context.Background(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	waitIgnoresTERM(t, a.PID)
	done := make(chan error, 1)
	stopped := time.Now()
	go func() {
		_, err := c.Stop(context.Background(), "a")
		done <- err
	}()
	waitState(t, c, "a", api.StateStopping)
	// The moment of the kill, three quarters into the 2 s stop timeout.
	time.Sleep(1500*time.Millisecond - time.Since(stopped))
	if err := syscall.Kill(a.GuardianPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// A second full timeout would end it 3.5 s after the stop.
	limit := stopped.Add(2*time.Second + 700*time.Millisecond)
	if !testproc.UntilEvery(time.Until(limit), 2*time.Millisecond, func() bool {
		p, err := punix.Stat(a.PID)
		return err != nil || p.Zombie()
	}) {
		t.Fatalf("the abandoned agent %d still runs %v after the stop began", a.PID, time.Since(stopped).Round(time.Millisecond))
	}
	t.Logf("the agent ended %v after the stop began", time.Since(stopped).Round(time.Millisecond))
	<-done
	waitState(t, c, "a", api.StateStopped)
	// The identity is free: it starts again at once.
	if r, err := c.Start(context.Background(), "a", false); err != nil || r.State != api.StateRunning {
		t.Fatalf("restart after reclaim: %+v %v", r, err)
	}
}

// waitIgnoresTERM waits until pid ignores SIGTERM (SigIgn in its status).
func waitIgnoresTERM(t *testing.T, pid int) {
	t.Helper()
	testproc.Eventually(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				var mask uint64
				fmt.Sscanf(strings.TrimSpace(v), "%x", &mask)
				if mask&(1<<(uint(syscall.SIGTERM)-1)) != 0 {
					return true
				}
			}
		}
		return false
	}, "pid %d never ignored SIGTERM", pid)
}
