//go:build linux || windows

package guardian

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// A pool hands out the guardians it started ahead of time, refills, and
// leaves nothing behind when closed (the leak check proves it).
func TestPoolUsesWarmGuardian(t *testing.T) {
	e := newWorld(t)
	p := NewPool(e.exe)
	defer p.Close()
	warm := func() int {
		var g *spawned
		testproc.Eventually(t, 20*time.Second, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			if n := len(p.warm); n == poolSize {
				g = p.warm[0] // the one the next Start takes
			}
			return g != nil
		}, "no warm guardian")
		return g.proc.Pid()
	}
	for _, id := range []string{"pooled-1", "pooled-2"} {
		pid := warm()
		spec := e.spec(id, "polite")
		spec.Executable = ""
		s, err := p.Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if s.Ready().GuardianPID != pid {
			t.Errorf("started guardian %d, want the warm one %d", s.Ready().GuardianPID, pid)
		}
		if err := s.Stop(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		<-s.Done()
	}
	warm()
}
