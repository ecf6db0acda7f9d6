package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// BenchmarkStartToReady measures guardian.Start, in process, from the start
// request until the guardian reports the agent running (the agent has been
// exec'd). The agent is a shell that execs sleep. Each session is stopped
// outside the timed region.
//
// Metrics: p50-ms and max-ms.
func BenchmarkStartToReady(b *testing.B) {
	spec := shellSpec(b, "bench-start@local")
	u := newUndo(b)
	var took []time.Duration
	for b.Loop() {
		begin := time.Now()
		s, err := guardian.Start(context.Background(), spec)
		d := time.Since(begin)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, d)
		r := track(u, s)
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		r.closeAll()
		u.drop(r.undoKey)
		b.StartTimer()
	}
	reportDurations(b, "", took)
	checkTarget(b, "median start to ready", millis(quantile(took, 0.5)), 8, "ms")
}

// shellSpec is a session whose agent is a shell that execs sleep, with its
// lock, private and log directories in a fresh temporary directory.
func shellSpec(b *testing.B, identity string) guardian.Spec {
	dir := b.TempDir()
	return guardian.Spec{
		Identity:    identity,
		Profile:     "bench",
		Argv:        []string{"/bin/sh", "-c", "exec sleep 1000"},
		Env:         []string{"PATH=" + os.Getenv("PATH")},
		StopTimeout: guardian.DefaultStopTimeout,
		LockDir:     filepath.Join(dir, "locks"),
		PrivateRoot: filepath.Join(dir, "private"),
		LogPath:     filepath.Join(dir, "logs", "agent.log"),
		Executable:  tetherBinary(b),
	}
}

// session is an in-process session with what is needed to stop it, or
// to kill it if stopping fails.
type session struct {
	s        *guardian.Session
	guardian *proc // nil if it could not be opened
	agent    *proc
	undoKey  int
}

// track opens the guardian and the agent of s through pidfds and
// registers the session's undo with u.
func track(u *undo, s *guardian.Session) *session {
	r := &session{s: s}
	// The pidfd names the guardian only if the session has not reaped it
	// yet, which Done says once the pidfd is open.
	if p, err := openPid(s.Ready().GuardianPID); err == nil {
		select {
		case <-s.Done():
			p.close()
		default:
			r.guardian = p
		}
	}
	if p, err := openPid(s.Ready().AgentPID); err == nil {
		r.agent = p
	}
	r.undoKey = u.add(r.abort)
	return r
}

// stop asks the guardian to tear the tree down and waits until it has
// been reaped; the teardown must be clean.
func (r *session) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.s.Stop(ctx, 0); err != nil {
		return fmt.Errorf("stopping %q: %w", r.s.Identity(), err)
	}
	return r.drain()
}

// drain reads the session's events until the guardian has been reaped.
func (r *session) drain() error {
	timeout := time.After(waitLimit)
	for {
		select {
		case _, ok := <-r.s.Events():
			if !ok {
				<-r.s.Done()
				return nil
			}
		case <-timeout:
			return fmt.Errorf("guardian pid %d of %q not reaped %v after its stop", r.s.Ready().GuardianPID, r.s.Identity(), waitLimit)
		}
	}
}

// abort is the undo of a session that was not stopped: stop it, or kill
// the guardian and then the agent, and reap both.
func (r *session) abort() {
	defer r.closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if r.s.Stop(ctx, 0) == nil && r.drain() == nil {
		return
	}
	if r.guardian != nil {
		r.guardian.kill()
	}
	_ = r.drain() // the session reaps its guardian
	if r.agent != nil {
		r.agent.kill()
		_ = r.agent.reapWithin(waitLimit)
	}
}

func (r *session) closeAll() {
	if r.guardian != nil {
		r.guardian.close()
		r.guardian = nil
	}
	if r.agent != nil {
		r.agent.close()
		r.agent = nil
	}
}
