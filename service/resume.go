package service

import (
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
)

// resumeGrace is how long after a resume an agent's ending is still the
// suspend's doing (its connections died with it): it is restarted at
// once, and the ending is not counted. The tray holds its notices for as
// long after a resume.
const resumeGrace = 10 * time.Second

// sleepState is what the service knows of the machine's suspends.
type sleepState struct {
	mu      sync.Mutex
	asleep  bool
	count   int       // suspends so far
	resumed time.Time // the last resume
}

// Slept tells the controller that the machine is about to suspend
// (true) or has resumed (false), as logind announces it. After a resume
// every agent is looked at once: one waiting for a restart (its backoff)
// or for what it needs starts now, without a backoff.
func (c *Controller) Slept(suspending bool) {
	c.sleep.mu.Lock()
	if suspending && !c.sleep.asleep {
		c.sleep.count++
	}
	c.sleep.asleep = suspending
	if !suspending {
		c.sleep.resumed = time.Now()
	}
	c.sleep.mu.Unlock()
	if suspending {
		c.logf("the machine suspends")
		return
	}
	c.logf("the machine resumed: waking the agents that wait")
	c.mu.Lock()
	acts := make([]*actor, 0, len(c.actors))
	for _, a := range c.actors {
		acts = append(acts, a)
	}
	c.mu.Unlock()
	for _, a := range acts {
		go func() {
			select {
			case a.cmds <- command{kind: cmdResume}:
			case <-a.done:
			}
		}()
	}
}

// suspendAt says which suspend an ending at now is the doing of: during
// one, or within resumeGrace of its resume; ok is false for none.
func (c *Controller) suspendAt(now time.Time) (n int, ok bool) {
	c.sleep.mu.Lock()
	defer c.sleep.mu.Unlock()
	s := &c.sleep
	return s.count, s.count > 0 && (s.asleep || now.Sub(s.resumed) <= resumeGrace)
}

// wake: the machine resumed. A restart or a start waiting for what the
// agent needs happens now, without a backoff.
func (a *actor) wake() {
	if !a.want || a.session != nil || a.parked || a.held != nil || a.depWait {
		return
	}
	if a.timerC == nil && a.offline == nil {
		return
	}
	a.stopTimer()
	a.backoff = 0
	a.start()
}

// excused restarts at once an agent that ended (with e) during a suspend
// or just after its resume, once a suspend, without counting the ending
// toward its backoff or a crash loop; it reports whether it did.
func (a *actor) excused(e *api.Error, now time.Time) bool {
	n, ok := a.c.suspendAt(now)
	if !ok || a.freeSleep == n {
		return false
	}
	a.freeSleep = n
	a.backoff = 0
	a.row.Restarts++
	a.restartWhy = "restarted after the machine resumed"
	a.setState(api.StateBackoff, e)
	a.schedule(0)
	return true
}
