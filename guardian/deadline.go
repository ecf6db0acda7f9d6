package guardian

import (
	"time"

	"github.com/tether-dev/tether/wire"
)

// fenceTimer fires when the guardian must begin stopping its tree so
// that the tree is dead, SIGKILL included, by the lease's deadline: the
// deadline less the stop timeout and wire.KillMargin. A guardian whose
// agent holds no lease has none: a nil channel, and no timer to wake it.
type fenceTimer struct {
	t *time.Timer
	c <-chan time.Time
}

// fenceTimer arms the timer of g.deadline, if any.
func (g *guardian) fenceTimer() *fenceTimer {
	f := &fenceTimer{}
	if g.deadline.IsZero() {
		return f
	}
	f.t = time.NewTimer(g.stopBy())
	f.c = f.t.C
	return f
}

// stopBy is how long from now the tree's stop must begin.
func (g *guardian) stopBy() time.Duration {
	return max(time.Until(g.deadline)-g.req.StopTimeout.Duration()-wire.KillMargin, 0)
}

// renew moves the deadline to left from now: the owner renewed the
// lease. A deadline never moves back: a late message that says less is
// one overtaken by a newer renewal.
func (g *guardian) renew(left time.Duration, f *fenceTimer) {
	if f.t == nil {
		g.logf("ignoring a deadline: this agent's identity is held under no lease")
		return
	}
	if d := time.Now().Add(left); d.After(g.deadline) {
		g.deadline = d
	}
	f.t.Reset(g.stopBy())
}

func (f *fenceTimer) stop() {
	if f.t != nil {
		f.t.Stop()
	}
}
