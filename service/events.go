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
	if _, ok := c.actors[row.ID]; ok {
		c.rows[row.ID] = row
	}
	ev := api.Event{Type: api.EventAgent, Time: time.Now().UTC(), Agent: &row}
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
// the agents in logs, until cancel.
func (c *Controller) Subscribe(logs []string) (<-chan api.Event, func()) {
	s := &subscriber{ch: make(chan api.Event, subscriberBuffer), logs: map[string]bool{}, stop: make(chan struct{})}
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	for _, id := range logs {
		if _, err := c.actor(id); err == nil && !s.logs[id] {
			s.logs[id] = true
			go c.followLog(s, id)
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

// followLog sends the lines appended to an agent's log while the
// subscriber listens. It checks the file every 200 ms, and only while
// someone follows it.
func (c *Controller) followLog(s *subscriber, id string) {
	f := newFollower(c.opts.Paths.LogPath(id))
	defer f.close()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		lines := f.read()
		if len(lines) == 0 {
			continue
		}
		c.mu.Lock()
		if _, ok := c.subs[s]; !ok {
			c.mu.Unlock()
			return
		}
		for _, l := range lines {
			c.deliverLocked(s, api.Event{Type: api.EventLog, Time: time.Now().UTC(), ID: id, Line: l})
			if _, ok := c.subs[s]; !ok {
				break
			}
		}
		c.mu.Unlock()
	}
}
