package service

import (
	"fmt"
	"time"

	"github.com/tether-dev/tether/api"
)

// Intent that could not be saved (a full disk, a read-only state
// directory, a state file being repaired) is not dropped after the one
// answer that reported it: it stays on the agent's row as its
// IntentError and is saved again on the next write of the state file
// that succeeds, after a reload, and on a timer that backs off from
// intentRetryMin to intentRetryMax. The timer runs only while something
// is unsaved.
const (
	intentRetryMin = time.Second
	intentRetryMax = time.Minute
)

// unsavedIntent is an agent's intent that is not on disk yet.
type unsavedIntent struct {
	enabled bool
	err     *api.Error
}

// saveIntent saves one agent's intent and notes the outcome on its row.
// It runs with intentMu held.
func (c *Controller) saveIntent(id string, enabled bool) error {
	var ae *api.Error
	if err := c.store.SetEnabled(id, enabled); err != nil {
		ae = &api.Error{Code: api.CodeState, Message: fmt.Sprintf("saving that %q is %s: %v (retrying; until it is saved, a service that crashed would not know)",
			id, map[bool]string{true: "enabled", false: "disabled"}[enabled], err)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.unsaved[id]
	if ae == nil {
		delete(c.unsaved, id)
	} else {
		c.unsaved[id] = unsavedIntent{enabled: enabled, err: ae}
	}
	if row, ok := c.rows[id]; ok && (was || ae != nil) {
		c.publishLocked(row)
	}
	if ae != nil {
		c.wakeIntentsLocked()
		return ae
	}
	return nil
}

// saveUnsaved tries again every intent not saved yet. It runs with
// intentMu held, so each value it saves is the latest one asked for.
func (c *Controller) saveUnsaved() {
	c.mu.Lock()
	todo := make(map[string]bool, len(c.unsaved))
	for id, u := range c.unsaved {
		todo[id] = u.enabled
	}
	c.mu.Unlock()
	for id, enabled := range todo {
		_ = c.saveIntent(id, enabled)
	}
}

// retryIntentsNow asks retryIntents for a try now.
func (c *Controller) retryIntentsNow() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wakeIntentsLocked()
}

func (c *Controller) wakeIntentsLocked() {
	if len(c.unsaved) == 0 {
		return
	}
	select {
	case c.intentRetry <- struct{}{}:
	default:
	}
}

// retryIntents saves what could not be saved, when asked to and on a
// backing-off timer while anything is unsaved, until the controller
// shuts down.
func (c *Controller) retryIntents() {
	var t *time.Timer
	var tc <-chan time.Time
	wait := intentRetryMin
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		select {
		case <-c.quit:
			return
		case <-c.intentRetry:
		case <-tc:
			tc = nil
		}
		c.intentMu.Lock()
		c.saveUnsaved()
		c.intentMu.Unlock()
		c.mu.Lock()
		left := len(c.unsaved)
		c.mu.Unlock()
		if t != nil {
			t.Stop()
			tc = nil
		}
		if left == 0 {
			wait = intentRetryMin
			continue
		}
		t = time.NewTimer(wait)
		tc = t.C
		wait = min(2*wait, intentRetryMax)
	}
}
