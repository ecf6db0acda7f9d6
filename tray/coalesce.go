package tray

import (
	"fmt"
	"time"
)

// Coalescer keeps notifications from becoming a storm: at most one per key
// every PerKey, and at most PerMinute in any minute overall. What it holds
// back is counted, and the next notice admitted for that key says so.
// The menu always shows the current state, so nothing held back is lost
// to the user. The zero value is not usable; see NewCoalescer.
type Coalescer struct {
	PerKey    time.Duration
	PerMinute int

	last map[string]time.Time // key -> last admitted
	held map[string]int       // key -> held back since
	sent []time.Time          // admitted within the last minute, oldest first
}

// NewCoalescer returns a coalescer with tether's limits: one per agent and
// kind every 30 s, five a minute.
func NewCoalescer() *Coalescer {
	return &Coalescer{PerKey: 30 * time.Second, PerMinute: 5}
}

// Admit reports whether a notice for key may be shown at now, and how many
// for key were held back since the last one admitted.
func (c *Coalescer) Admit(key string, now time.Time) (ok bool, held int) {
	if c.last == nil {
		c.last, c.held = map[string]time.Time{}, map[string]int{}
	}
	// Forget what no longer limits anything, so the maps stay small.
	for k, t := range c.last {
		if now.Sub(t) >= c.PerKey && c.held[k] == 0 {
			delete(c.last, k)
		}
	}
	for len(c.sent) > 0 && now.Sub(c.sent[0]) >= time.Minute {
		c.sent = c.sent[1:]
	}
	if t, ok := c.last[key]; ok && now.Sub(t) < c.PerKey || len(c.sent) >= c.PerMinute {
		c.held[key]++
		return false, 0
	}
	held = c.held[key]
	delete(c.held, key)
	c.last[key] = now
	c.sent = append(c.sent, now)
	return true, held
}

// withHeld adds to n's body how many like it were held back.
func withHeld(n Notice, held int) Notice {
	switch {
	case held == 1:
		n.Body += "\n(1 similar notification was held back.)"
	case held > 1:
		n.Body += fmt.Sprintf("\n(%d similar notifications were held back.)", held)
	}
	return n
}
