package guardian

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// A held start takes the identity (a contender is refused) and starts
// no agent until its go, which adds to the agent's environment; a held
// start given up leaves nothing: no lock, no private directory, no line
// in the log, and its guardian exits.
func TestHeldStartWaitsForGo(t *testing.T) {
	e := newWorld(t)
	p := NewPool(e.exe)
	defer p.Close()
	spec := e.spec("held@relay", "env")
	spec.Executable = ""
	envFile := filepath.Join(e.helper, "env")
	lock := filepath.Join(e.locks, Key(spec.Identity)+".lock")
	// held waits until the held start's guardian has the lock, and its
	// private directory.
	held := func(h *Held) {
		t.Helper()
		// The private directory is made under the lock: polled alone,
		// so that the test never holds the lock the guardian takes.
		if !testproc.Until(10*time.Second, func() bool { return len(e.privateDirs()) == 1 }) {
			h.Abort()
			t.Fatalf("a held start made no private directory\nlog:\n%s", e.log())
		}
		if lockFree(t, lock) {
			h.Abort()
			t.Fatal("a held start has its private directory but not the lock")
		}
	}

	h, err := p.Begin(spec)
	if err != nil {
		t.Fatal(err)
	}
	held(h)
	contender := e.spec("held@relay", "polite")
	if _, err := Start(context.Background(), contender); !errors.Is(err, ErrContention) {
		h.Abort()
		t.Fatalf("a contender while the start is held: %v, want contention", err)
	}
	if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
		h.Abort()
		t.Fatalf("the agent ran before its go: %v", err)
	}
	s, err := h.Go(context.Background(), []string{"TETHER_FENCE=42"}, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("Go: %v\nlog:\n%s", err, e.log())
	}
	t.Cleanup(func() { stopSession(t, s) })
	e.waitAnnounced(map[string]int{"leader": 1})
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(env)+"\n", "\nTETHER_FENCE=42\n") {
		t.Errorf("the agent's environment lacks the go's TETHER_FENCE=42:\n%s", env)
	}
	stopSession(t, s)

	before := e.log()
	h, err = p.Begin(spec)
	if err != nil {
		t.Fatal(err)
	}
	held(h)
	h.Abort()
	select {
	case <-h.s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the guardian of a start given up did not exit")
	}
	if left := e.privateDirs(); len(left) > 0 {
		t.Errorf("private directories left by a start given up: %v", left)
	}
	testproc.Eventually(t, 5*time.Second, func() bool {
		s, err := Start(context.Background(), e.spec("held@relay", "polite"))
		if err != nil {
			return false
		}
		stopSession(t, s)
		return true
	}, "the identity is not free after a start given up")
	if after := e.log(); after != before && strings.Contains(after[len(before):], "not started") {
		t.Errorf("a start given up wrote to the log:\n%s", after[len(before):])
	}
}
