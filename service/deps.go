package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/config"
)

// Dependencies between agents (after:, requires:) are kept by the actors
// themselves: an actor whose start must wait parks in starting, says for
// whom in its status, and is poked whenever the row of one of the agents
// it depends on changes. The controller only orders the stops that must
// come before others (a stop of a required agent, the shutdown).

// depGraph is the config's dependencies, both ways.
type depGraph struct {
	// dependents[id] lists the agents that name id in after: or
	// requires:, in the config's order.
	dependents map[string][]string
	// requiredBy[id] lists those that name it in requires:.
	requiredBy map[string][]string
}

func newDepGraph(cfg *config.Config) depGraph {
	g := depGraph{dependents: map[string][]string{}, requiredBy: map[string][]string{}}
	for _, a := range cfg.Agents {
		for _, d := range a.Deps() {
			g.dependents[d] = append(g.dependents[d], a.ID)
		}
		for _, d := range a.Requires {
			g.requiredBy[d] = append(g.requiredBy[d], a.ID)
		}
	}
	return g
}

// pokeDependentsLocked tells the actors that depend on id that its row
// changed. c.mu is held.
func (c *Controller) pokeDependentsLocked(id string) {
	for _, d := range c.deps.dependents[id] {
		if act, ok := c.actors[d]; ok {
			select {
			case act.depc <- struct{}{}:
			default: // a poke is pending already
			}
		}
	}
}

// depVerdict says whether a start may go ahead: wait names the agents it
// still waits for; fail is set when a required agent cannot run.
type depVerdict struct {
	wait []string
	fail *api.Error
}

// depVerdict judges cfg's dependencies by their rows. A required agent
// must be running (ready); one that failed, or is stopped and not wanted,
// refuses the start. An agent it only comes after is waited for while it
// is on its way (starting, backoff, stopping for a restart), and
// otherwise not. Either is waited for while a reload restarts it.
func (c *Controller) depVerdict(cfg config.Agent) depVerdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	var v depVerdict
	for _, id := range cfg.Deps() {
		row, ok := c.rows[id]
		if !ok {
			continue // removed by a reload in flight; the config is checked
		}
		required := slices.Contains(cfg.Requires, id)
		switch {
		case c.restarting[id] > 0:
			// Restarted into a changed entry by a reload: its
			// row may still be the old tree's.
			v.wait = append(v.wait, id)
		case row.State == api.StateRunning:
		case required && (row.State == api.StateFailed || row.State == api.StateCleanupFailed):
			msg := fmt.Sprintf("required agent %q is %s", id, row.State)
			if row.Error != nil {
				msg += ": " + row.Error.Message
			}
			v.fail = &api.Error{Code: api.CodeDependency, Message: msg}
			return v
		case required && row.State == api.StateStopped && row.Enabled:
			v.fail = &api.Error{Code: api.CodeDependency, Message: fmt.Sprintf("required agent %q ended and is not restarted", id)}
			return v
		case required:
			// Stopped and not wanted means its start, asked for by
			// pullRequired, has not been taken yet.
			v.wait = append(v.wait, id)
		case row.Enabled && row.State != api.StateFailed && row.State != api.StateStopped:
			v.wait = append(v.wait, id)
		}
	}
	return v
}

// pullRequired starts the agents cfg requires that are not wanted yet.
// It does not wait: their rows poke the waiting actor.
func (c *Controller) pullRequired(cfg config.Agent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range cfg.Requires {
		row, ok := c.rows[id]
		act := c.actors[id]
		if !ok || act == nil || row.Enabled {
			continue
		}
		// Not from the actor's goroutine: two actors never block on
		// each other's queues.
		go act.send(command{kind: cmdStart})
	}
}

// depsReady decides, at the start of a start, whether it may go ahead.
// When it may not, the agent is parked in starting (its status says for
// whom it waits) or failed with code dependency.
func (a *actor) depsReady() bool {
	if len(a.cfg.Requires) == 0 && len(a.cfg.After) == 0 {
		return true
	}
	if !a.depWait {
		a.c.pullRequired(a.cfg)
	}
	v := a.c.depVerdict(a.cfg)
	switch {
	case v.fail != nil:
		a.depWait = false
		a.fail(v.fail)
		return false
	case len(v.wait) > 0:
		status := "waiting for " + strings.Join(v.wait, ", ")
		if !a.depWait || a.row.Status != status {
			a.depWait = true
			a.row.Status = status
			a.agentsWait(v.wait)
			a.setState(api.StateStarting, nil)
		}
		return false
	}
	a.depWait = false
	return true
}

// depsChanged acts on a dependency's new row: a waiting start goes on
// (or fails), and a running agent whose required agent stopped or failed
// stops too.
func (a *actor) depsChanged() {
	switch {
	case a.depWait && a.want && a.session == nil:
		a.start()
	case a.session != nil && !a.stopAsked && a.want:
		if id, row, gone := a.c.requiredGone(a.cfg); gone {
			a.want = false
			a.restartArm = false
			a.depErr = &api.Error{Code: api.CodeDependency, Message: fmt.Sprintf("stopped because required agent %q %s", id, goneHow(row))}
			a.requestStop()
		}
	}
}

// requiredGone finds a required agent that is no longer running and will
// not be by itself: failed, or stopped and not wanted. One that crashed
// and is restarted by its policy (backoff) is not gone.
func (c *Controller) requiredGone(cfg config.Agent) (string, api.Agent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range cfg.Requires {
		row, ok := c.rows[id]
		if !ok {
			continue
		}
		switch row.State {
		case api.StateFailed, api.StateCleanupFailed:
			return id, row, true
		case api.StateStopped:
			if !row.Enabled {
				return id, row, true
			}
		}
	}
	return "", api.Agent{}, false
}

func goneHow(row api.Agent) string {
	if row.State == api.StateStopped {
		return "stopped"
	}
	s := "is " + string(row.State)
	if row.Error != nil {
		s += ": " + row.Error.Message
	}
	return s
}

// stopDependents stops, before id stops, every running agent that
// requires it, directly or through another: they could not run without
// it. Their intent stays as it is.
func (c *Controller) stopDependents(ctx context.Context, id string) error {
	c.mu.Lock()
	var acts []*actor
	seen := map[string]bool{id: true}
	queue := []string{id}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, d := range c.deps.requiredBy[cur] {
			if seen[d] {
				continue
			}
			seen[d] = true
			queue = append(queue, d)
			if act, ok := c.actors[d]; ok && c.rows[d].Enabled {
				acts = append(acts, act)
			}
		}
	}
	c.mu.Unlock()
	cause := &api.Error{Code: api.CodeDependency, Message: fmt.Sprintf("stopped because required agent %q was stopped", id)}
	var mu sync.Mutex
	var errs []error
	c.stopInOrder(acts, func(act *actor) {
		if err := act.begin(ctx, command{kind: cmdDepStop, cause: cause})(); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}

// stopInOrder runs stop for every actor of acts, concurrently, except
// that an agent stops only once every agent of acts that comes after it
// or requires it has stopped.
func (c *Controller) stopInOrder(acts []*actor, stop func(*actor)) {
	done := make(map[string]chan struct{}, len(acts))
	for _, a := range acts {
		done[a.id] = make(chan struct{})
	}
	c.mu.Lock()
	deps := c.deps
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range acts {
		wg.Go(func() {
			defer close(done[a.id])
			for _, d := range deps.dependents[a.id] {
				if ch, ok := done[d]; ok {
					<-ch
				}
			}
			stop(a)
		})
	}
	wg.Wait()
}
