//go:build linux

package guardian

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/wire"
)

// survivingOwner starts spec with survive_crash d in an owner process,
// waits for its tree and kills the owner; it returns the tree (the
// guardian last) and the guardian's first answer.
func survivingOwner(t *testing.T, e *world, spec Spec, d time.Duration) ([]procRef, *wire.Ready) {
	t.Helper()
	spec.SurviveCrash = d
	spec.AdoptPath = filepath.Join(e.dir, "adopt", Key(spec.Identity)+".sock")
	o := e.newOwner()
	r := o.start(spec)
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2}))
	g, err := refOf(r.GuardianPID)
	if err != nil {
		t.Fatal(err)
	}
	o.kill()
	return append(rs, g), r
}

// waitWaiting polls the adopt socket until the guardian answers as
// waiting to be adopted.
func waitWaiting(t *testing.T, path string) wire.Waiting {
	t.Helper()
	var w wire.Waiting
	var err error
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		w, err = QueryWaiting(context.Background(), path)
		return err == nil
	}) {
		t.Fatalf("no guardian waits at %s: %v", path, err)
	}
	return w
}

// survive_crash: the owner dies, the guardian keeps the tree and the
// identity and waits; another profile's owner is refused; an owner of its
// profile adopts it, sees the same agent, and a stop leaves nothing.
func TestSurviveCrashAdopted(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("survivor", "polite")
	spec.Agent, spec.Fingerprint = "survivor-agent", "entry-1"
	rs, r := survivingOwner(t, e, spec, 30*time.Second)
	path := filepath.Join(e.dir, "adopt", Key(spec.Identity)+".sock")
	w := waitWaiting(t, path)
	if w.Identity != spec.Identity || w.Profile != spec.Profile || w.AgentPID != r.AgentPID || w.GuardianPID != r.GuardianPID || w.Until.Sub(w.Orphaned) != 30*time.Second {
		t.Errorf("waiting %+v, want identity %q, profile %q, agent %d, guardian %d, a 30s window", w, spec.Identity, spec.Profile, r.AgentPID, r.GuardianPID)
	}
	if a := alive(rs); len(a) != len(rs) {
		t.Fatalf("the tree did not survive its owner: alive %v of %v", a, rs)
	}
	if lockFree(t, r.LockPath) {
		t.Fatal("the identity was let go while waiting to be adopted")
	}
	// The identity is still held: a start is contention, never a second
	// tree.
	if _, err := Start(context.Background(), spec); !errors.Is(err, ErrContention) {
		t.Fatalf("a start while the guardian waits: %v, want contention", err)
	}
	other := spec
	other.Profile = "other"
	var ae *AdoptError
	if _, err := Adopt(context.Background(), other, path); !errors.As(err, &ae) {
		t.Fatalf("another profile's adoption: %v, want an *AdoptError", err)
	}
	s, err := Adopt(context.Background(), spec, path)
	if err != nil {
		t.Fatalf("Adopt: %v\nlog:\n%s", err, e.log())
	}
	t.Cleanup(func() { stopSession(t, s) })
	ev := <-s.Events()
	if ev.Type != EventAttached || ev.Ready == nil || ev.Ready.AgentPID != r.AgentPID || !ev.Ready.Since.Equal(r.Since) {
		t.Fatalf("first event %+v (ready %+v), want attached with agent %d since %v", ev, ev.Ready, r.AgentPID, r.Since)
	}
	// What the tree was started as comes back to its adopter.
	if got := s.Ready(); got.Agent != spec.Agent || got.Fingerprint != spec.Fingerprint || *ev.Ready != got {
		t.Errorf("adopted as agent %q with fingerprint %q (event %+v), started as %q with %q", got.Agent, got.Fingerprint, ev.Ready, spec.Agent, spec.Fingerprint)
	}
	if !gone(path) {
		t.Error("the adopt socket is still there once adopted")
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatalf("Stop of the adopted tree: %v", err)
	}
	waitGone(t, rs, time.Second)
	if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
		t.Fatalf("after stop: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
	}
}

// Nobody adopts in time: the guardian tears down as it would have at its
// owner's death, only the window later (I2's one exception), and removes
// its adopt socket.
func TestSurviveCrashNotAdopted(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("unadopted", "polite")
	spec.StopTimeout = 300 * time.Millisecond
	window := 500 * time.Millisecond
	rs, r := survivingOwner(t, e, spec, window)
	killed := time.Now()
	path := filepath.Join(e.dir, "adopt", Key(spec.Identity)+".sock")
	bound := window + spec.StopTimeout + 100*time.Millisecond
	if !testproc.Until(time.Until(killed.Add(bound)), func() bool {
		reapAdopted()
		return len(alive(rs)) == 0 && gone(r.PrivateDir) && lockFree(t, r.LockPath) && gone(path)
	}) {
		t.Fatalf("after %v alive %v, private dir gone %v, lock free %v, socket gone %v\nlog:\n%s",
			bound, alive(rs), gone(r.PrivateDir), lockFree(t, r.LockPath), gone(path), e.log())
	}
	if time.Since(killed) < window {
		t.Errorf("the tree went down %v after its owner, before the %v window closed\nlog:\n%s", time.Since(killed), window, e.log())
	}
}

// survive_crash is for a crash of the owner only: a stop is a stop.
func TestSurviveCrashStopIsAStop(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("stopped-survivor", "polite")
	spec.SurviveCrash = time.Minute
	spec.AdoptPath = filepath.Join(e.dir, "adopt", Key(spec.Identity)+".sock")
	s := e.start(spec)
	rs := politeTree(e, s)
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	waitGone(t, rs, 100*time.Millisecond)
	<-s.Done()
	if _, err := os.Lstat(spec.AdoptPath); err == nil {
		t.Error("a stopped guardian opened its adopt socket")
	}
}
