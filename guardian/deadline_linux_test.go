package guardian

import (
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/wire"
)

// leaseMargin is the service's config.LeaseMargin: a lease renewed for a
// deadline D cannot expire before D plus this, which is what I10 bounds.
const leaseMargin = 500 * time.Millisecond

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

// renewer renews s's deadline, left ahead, every period until stop; it
// returns the last deadline sent.
type renewer struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	last  time.Time
}

func renew(t *testing.T, s *Session, left, period time.Duration) *renewer {
	r := &renewer{stopc: make(chan struct{})}
	r.wg.Go(func() {
		for {
			select {
			case <-r.stopc:
				return
			case <-time.After(period):
			}
			d := time.Now().Add(left)
			if err := s.Renew(d); err != nil {
				t.Errorf("renew: %v", err)
				return
			}
			r.last = d
		}
	})
	return r
}

func (r *renewer) stop() time.Time {
	close(r.stopc)
	r.wg.Wait()
	return r.last
}

// A guardian whose lease's deadline comes without a renewal stops its
// tree, SIGKILL included (the agent ignores SIGTERM), so that the whole
// tree is dead before the lease can expire (I10). Renewals keep it up
// until the whole tree has started.
func TestDeadlineStopsTree(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("fenced@relay", "stubborn")
	spec.StopTimeout = 300 * time.Millisecond
	const left = 2 * time.Second
	spec.Deadline = time.Now().Add(left)
	s := e.start(spec)
	r := renew(t, s, left, 200*time.Millisecond)
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "worker": 1}))
	deadline := r.stop()
	if deadline.IsZero() {
		deadline = spec.Deadline
	}
	dead := make(chan time.Time, 1)
	go func() {
		testproc.UntilEvery(10*time.Second, time.Millisecond, func() bool { return len(alive(rs)) == 0 })
		dead <- time.Now()
	}()
	ev := nextStopped(t, s, 10*time.Second)
	if ev.Reason != wire.ReasonDeadline {
		t.Fatalf("stopped for %q, want %q\nlog:\n%s", ev.Reason, wire.ReasonDeadline, e.log())
	}
	if left := alive(rs); len(left) > 0 {
		t.Fatalf("tree members alive after the stop: %v", left)
	}
	gone := <-dead
	if gone.After(deadline.Add(leaseMargin)) {
		t.Fatalf("tree seen dead %v after the deadline, when the lease could expire", gone.Sub(deadline))
	}
	t.Logf("tree seen dead %v before the deadline", deadline.Sub(gone))
	if ev.Cleanup == nil || ev.Cleanup.Killed == 0 {
		t.Fatalf("cleanup %+v: want members killed (the agent ignores SIGTERM)", ev.Cleanup)
	}
}

// Renewals keep the tree running past the first deadline; when they
// stop, so does the tree, by the last deadline.
func TestDeadlineRenewed(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("renewed@relay", "sleeper")
	spec.StopTimeout = 200 * time.Millisecond
	const left = 1500 * time.Millisecond
	first := time.Now().Add(left)
	spec.Deadline = first
	s := e.start(spec)
	r := renew(t, s, left, 250*time.Millisecond)
	select {
	case ev := <-s.Events():
		t.Fatalf("%s (%s) while renewed\nlog:\n%s", ev.Type, ev.Reason, e.log())
	case <-time.After(time.Until(first.Add(time.Second))):
	}
	last := r.stop()
	ev := nextStopped(t, s, 10*time.Second)
	if ev.Reason != wire.ReasonDeadline {
		t.Fatalf("stopped for %q, want %q", ev.Reason, wire.ReasonDeadline)
	}
	if now := time.Now(); now.After(last.Add(leaseMargin)) {
		t.Fatalf("stopped %v after the last deadline, when the lease could expire", now.Sub(last))
	}
}
