package service

import (
	"time"

	"github.com/tether-dev/tether/api"
)

// subscriber is one client of the event stream.
type subscriber struct {
	ch   chan api.Event
	logs map[string]bool
	stop chan struct{}
}

// subscriberBuffer bounds what a slow reader may fall behind by; one that
// falls further is disconnected (its stream ends) rather than allowed to
// stall the agents. The tray reconnects and gets a fresh hello.
const subscriberBuffer = 256

// publish records an agent's row and sends it to every subscriber.
func (c *Controller) publish(row api.Agent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publishLocked(row)
}

// publishLocked is publish with c.mu held. The row carries the agent's
// intent that could not be saved, if any.
func (c *Controller) publishLocked(row api.Agent) {
	row.IntentError = c.unsaved[row.ID].err
	if _, ok := c.actors[row.ID]; ok {
		c.rows[row.ID] = row
		c.pokeDependentsLocked(row.ID)
	}
	ev := api.Event{Type: api.EventAgent, Time: time.Now().UTC(), Agent: &row}
	for s := range c.subs {
		c.deliverLocked(s, ev)
	}
}

// publishStatus sends the whole status to every subscriber: after a
// reload, which may have removed agents or failed.
func (c *Controller) publishStatus() {
	st := c.Status()
	c.mu.Lock()
	defer c.mu.Unlock()
	ev := api.Event{Type: api.EventStatus, Time: time.Now().UTC(), Status: &st}
	for s := range c.subs {
		c.deliverLocked(s, ev)
	}
}

func (c *Controller) deliverLocked(s *subscriber, ev api.Event) {
	select {
	case s.ch <- ev:
	default:
		delete(c.subs, s)
		close(s.ch)
	}
}

// Subscribe implements localapi.Backend: agent events, and log lines of
// the agents in logs (the last tail lines first), until cancel.
func (c *Controller) Subscribe(logs []string, tail int) (<-chan api.Event, func()) {
	s := &subscriber{ch: make(chan api.Event, subscriberBuffer), logs: map[string]bool{}, stop: make(chan struct{})}
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	for _, id := range logs {
		if _, err := c.actor(id); err == nil && !s.logs[id] {
			s.logs[id] = true
			// Open before returning: lines written from now on are
			// followed, the ones before are the tail.
			f := newFollower(c.opts.Paths.LogPath(id))
			go c.followLog(s, id, f, tail)
		}
	}
	var once bool
	cancel := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if once {
			return
		}
		once = true
		close(s.stop)
		if _, ok := c.subs[s]; ok {
			delete(c.subs, s)
			close(s.ch)
		}
	}
	return s.ch, cancel
}

// Log following: lines are sent only as far as the subscriber's buffer has
// room (less a reserve for agent events), the rest wait in the file. A
// burst is drained every few milliseconds; an idle log is checked every
// 200 ms, and only while someone follows it.
const (
	followIdle    = 200 * time.Millisecond
	followBusy    = 10 * time.Millisecond
	followReserve = 16
	followBatch   = 1000
)

func (c *Controller) followLog(s *subscriber, id string, f *follower, tail int) {
	defer f.close()
	var pending []string
	if tail > 0 {
		pending, _ = f.tail(tail)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if len(pending) == 0 {
			pending = f.read(followBatch)
		}
		if len(pending) > 0 {
			c.mu.Lock()
			if _, ok := c.subs[s]; !ok {
				c.mu.Unlock()
				return
			}
			room := cap(s.ch) - len(s.ch) - followReserve
			n := min(max(room, 0), len(pending))
			for _, l := range pending[:n] {
				s.ch <- api.Event{Type: api.EventLog, Time: time.Now().UTC(), ID: id, Line: l}
			}
			pending = pending[n:]
			c.mu.Unlock()
		}
		if len(pending) > 0 {
			t.Reset(followBusy)
		} else {
			t.Reset(followIdle)
		}
	}
}
