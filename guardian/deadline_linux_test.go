package guardian

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/wire"
)

// nextStopped returns the session's stopped event, failing the test if
// none comes within d.
func nextStopped(t *testing.T, s *Session, d time.Duration) Event {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatal("events closed without a stopped event")
			}
			if ev.Type == EventStopped || ev.Type == EventLost {
				return ev
			}
		case <-timeout:
			t.Fatalf("no stopped event within %v", d)
		}
	}
}

// A guardian whose lease's deadline comes without a renewal stops its
// tree, SIGKILL included (the agent ignores SIGTERM), so that the whole
// tree is dead before the deadline (I10).
func TestDeadlineStopsTree(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("fenced@relay", "stubborn")
	spec.StopTimeout = 300 * time.Millisecond
	deadline := time.Now().Add(2 * time.Second)
	spec.Deadline = deadline
	s := e.start(spec)
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "worker": 1}))
	ev := nextStopped(t, s, 10*time.Second)
	gone := time.Now()
	if ev.Reason != wire.ReasonDeadline {
		t.Fatalf("stopped for %q, want %q\nlog:\n%s", ev.Reason, wire.ReasonDeadline, e.log())
	}
	if left := alive(rs); len(left) > 0 {
		t.Fatalf("tree members alive after the stop: %v", left)
	}
	if gone.After(deadline) {
		t.Fatalf("tree confirmed dead %v after the deadline", gone.Sub(deadline))
	}
	if ev.Cleanup == nil || ev.Cleanup.Killed == 0 {
		t.Fatalf("cleanup %+v: want members killed (the agent ignores SIGTERM)", ev.Cleanup)
	}
}

// Renewals keep the tree running past the first deadline; when they
// stop, so does the tree, before the last deadline.
func TestDeadlineRenewed(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("renewed@relay", "polite")
	spec.StopTimeout = 200 * time.Millisecond
	const left = 1500 * time.Millisecond
	first := time.Now().Add(left)
	spec.Deadline = first
	s := e.start(spec)
	e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2})
	var last time.Time
	for end := first.Add(time.Second); time.Now().Before(end); {
		last = time.Now().Add(left)
		if err := s.Renew(last); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-s.Events():
			t.Fatalf("%s (%s) while renewed\nlog:\n%s", ev.Type, ev.Reason, e.log())
		case <-time.After(250 * time.Millisecond):
		}
	}
	ev := nextStopped(t, s, 10*time.Second)
	if ev.Reason != wire.ReasonDeadline {
		t.Fatalf("stopped for %q, want %q", ev.Reason, wire.ReasonDeadline)
	}
	if now := time.Now(); now.After(last) {
		t.Fatalf("stopped %v after the last deadline", now.Sub(last))
	}
}
