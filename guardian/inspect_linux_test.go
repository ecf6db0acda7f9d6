package guardian

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/freezer"
	"github.com/tether-dev/tether/wire"
)

// A guardian whose cleanup fails says so in its owner record, so that a
// service that did not start it (relaunched after its owner died) can
// tell a cleanup_failed holder from a running one (I3): Inspect and a
// contender's Holder carry the failed cleanup until the release clears
// the record.
func TestInspectNamesAFailedCleanup(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("inspect-unkillable", "polite")
	spec.StopTimeout = 100 * time.Millisecond
	spec.KillGrace = 200 * time.Millisecond
	if h, err := Inspect(spec.LockDir, spec.Identity); h != nil || err != nil {
		t.Fatalf("Inspect before any start: %+v, %v; want nothing", h, err)
	}
	s := e.start(spec)
	pids := e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2})
	h, err := Inspect(spec.LockDir, spec.Identity)
	if err != nil || h == nil || h.GuardianPID != s.Ready().GuardianPID || h.PrivateDir != s.Ready().PrivateDir || h.Cleanup != nil {
		t.Fatalf("Inspect of a running agent: %+v, %v", h, err)
	}
	thaw := freezer.Freeze(t, pids["sleeper"][0])
	stopErr := make(chan error, 1)
	go func() { stopErr <- s.Stop(context.Background(), 0) }()
	if ev := <-s.Events(); ev.Type != EventCleanupFailed {
		t.Fatalf("event %+v, want cleanup_failed", ev)
	}
	h, err = Inspect(spec.LockDir, spec.Identity)
	if err != nil || h == nil || h.Cleanup == nil || h.Cleanup.Code != wire.CleanupTreeAlive || h.GuardianPID != s.Ready().GuardianPID {
		t.Fatalf("Inspect during the failed cleanup: %+v, %v; want the guardian and its tree_alive cleanup", h, err)
	}
	other := spec
	other.Profile = "other"
	_, err = Start(context.Background(), other)
	var se *StartError
	if !errors.As(err, &se) || se.Code != wire.CodeContention || se.Holder == nil || se.Holder.Cleanup == nil {
		t.Fatalf("contender: %v (holder %+v), want contention naming the failed cleanup", err, se)
	}
	thaw()
	for range s.Events() {
	}
	if err := <-stopErr; err != nil {
		t.Fatalf("Stop after thaw: %v", err)
	}
	if h, err := Inspect(spec.LockDir, spec.Identity); h != nil || err != nil {
		t.Fatalf("Inspect after the release: %+v, %v; want nothing", h, err)
	}
}
