package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
)

// Adoption (survive_service_crash): when a service dies, the guardian of
// an agent that opted in keeps the tree and the identity for that long,
// waiting at its adopt socket (Paths.AdoptPath). This service, started
// again, takes only the trees its config asks for:
//
//   - before any agent starts, it looks for every guardian of its profile
//     that waits, and stops each whose identity no entry has (the agent
//     was removed, or its identity changed), with the guardian's staged
//     teardown; an agent whose identity changed starts only once the
//     tree of its old identity has stopped (see sweepUnclaimed);
//   - an agent looks at its own identity's adopt socket before each
//     start: a tree that waits there is adopted, never started a second
//     time (the guardian still holds the identity, so a start would only
//     meet contention). A tree started from another entry than the
//     config's now (the command, environment or any other key changed:
//     the fingerprints differ) is stopped and started again from the
//     entry as it is, and its status says so. An agent that is not to run
//     is adopted all the same, and stopped at once.

// adoptWait bounds an adoption: a dial, the attach and its answer.
const adoptWait = 5 * time.Second

// restartedIntoEntry is the status of an agent whose adopted tree was
// started from an entry that changed since.
const restartedIntoEntry = "restarted: its config entry changed while the service was down"

// adopt takes over the tree of the agent's guardian if one waits to be
// adopted, and reports whether it did. The row is then that of the
// running agent, as its guardian describes it; or, when the tree was
// started from another entry than the agent's now, that of a stop
// followed by a start from the entry as it is.
func (a *actor) adopt() bool {
	ctx, cancel := context.WithTimeout(context.Background(), adoptWait)
	defer cancel()
	spec := a.spec(nil)
	s, err := guardian.Adopt(ctx, spec, spec.AdoptPath)
	if err != nil {
		if !errors.Is(err, guardian.ErrNotWaiting) {
			// Another profile's tree (a start meets contention
			// then), or a guardian that did not answer in time.
			a.c.logf("agent %q: not adopted: %v", a.id, err)
		}
		return false
	}
	r := s.Ready()
	a.c.logf("agent %q: adopted its tree (agent pid %d, guardian pid %d, running since %s), which outlived the service before", a.id, r.AgentPID, r.GuardianPID, r.Since.Format(time.RFC3339))
	if r.Fingerprint == spec.Fingerprint {
		a.began(s, r.Since)
		return true
	}
	a.take(s, r.Since)
	if !a.want {
		// Stopped at once (adoptUnwanted) all the same.
		return true
	}
	a.c.logf("agent %q: its config entry changed while the service was down (the adopted tree was started from the entry before): restarting it from the entry as it is now", a.id)
	a.row.Status, a.restartWhy = "restarting: its config entry changed while the service was down", restartedIntoEntry
	a.restartArm = true
	a.requestStop()
	return true
}

// adoptUnwanted adopts a waiting tree of an agent that is not to run, and
// stops it: it would otherwise run until its window closed.
func (a *actor) adoptUnwanted() {
	if !a.adoptIdle || a.session != nil {
		return
	}
	if a.adopt() {
		a.requestStop()
	}
}

// sweep is the stop, when the service starts, of the trees waiting to be
// adopted that no entry of the config claims.
type sweep struct {
	listed chan struct{} // closed once they are all adopted
	// stopped holds, by the agent id each tree was started for, a
	// channel closed once that tree is stopped (or known not to be); it
	// is complete once listed is closed.
	stopped map[string]chan struct{}
}

// awaitSweep waits, first thing in an actor's run, until the trees that
// no entry claims are adopted, and, if one of them was started for this
// agent (its identity changed since), until that one is stopped.
func (c *Controller) awaitSweep(id string) {
	<-c.sweep.listed
	if ch, ok := c.sweep.stopped[id]; ok {
		<-ch
	}
}

// sweepUnclaimed adopts every guardian of the profile that waits to be
// adopted with an identity no entry of cfg has, stops its tree, and
// reports each in the service's log. It closes c.sweep.listed once they
// are all adopted.
func (c *Controller) sweepUnclaimed(cfg *config.Config) {
	claimed := make(map[string]bool, len(cfg.Agents))
	for _, a := range cfg.Agents {
		claimed[a.Identity] = true
	}
	var mu sync.Mutex
	var trees []*guardian.Session
	var wg sync.WaitGroup
	for _, path := range c.opts.Paths.adoptSockets() {
		wg.Go(func() {
			if s := c.adoptUnclaimed(path, claimed); s != nil {
				mu.Lock()
				trees = append(trees, s)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, s := range trees {
		if id := s.Ready().Agent; id != "" {
			c.sweep.stopped[id] = make(chan struct{})
		}
	}
	close(c.sweep.listed)
	for _, s := range trees {
		go c.stopUnclaimed(s, c.sweep.stopped[s.Ready().Agent])
	}
}

// adoptUnclaimed adopts the guardian waiting at path when it is of this
// profile and no entry claims its identity; otherwise, or when it cannot,
// it returns nil.
func (c *Controller) adoptUnclaimed(path string, claimed map[string]bool) *guardian.Session {
	ctx, cancel := context.WithTimeout(context.Background(), adoptWait)
	defer cancel()
	p := c.opts.Paths
	w, err := guardian.QueryWaiting(ctx, path)
	if err != nil || w.Profile != p.Profile || claimed[w.Identity] {
		return nil
	}
	s, err := guardian.Adopt(ctx, guardian.Spec{Identity: w.Identity, Profile: p.Profile, LockDir: p.LockDir, PrivateRoot: p.PrivateRoot, AdoptPath: path}, path)
	if err != nil {
		c.logf("the tree of identity %q (agent pid %d) waits to be adopted, and no agent of the config has that identity; it could not be adopted to be stopped: %v", w.Identity, w.AgentPID, err)
		return nil
	}
	return s
}

// stopUnclaimed stops an adopted tree that no entry claims, with the
// guardian's staged teardown and stop timeout, reports the outcome, and
// closes stopped (when not nil) once it is known.
func (c *Controller) stopUnclaimed(s *guardian.Session, stopped chan struct{}) {
	r := s.Ready()
	what := fmt.Sprintf("agent %q", r.Agent)
	if r.Agent == "" {
		what = "an agent"
	}
	c.logf("the tree of identity %q (%s, agent pid %d), which outlived the service before, is claimed by no agent of the config (the agent was removed or its identity changed): stopping it", s.Identity(), what, r.AgentPID)
	var once sync.Once
	release := func() {
		if stopped != nil {
			once.Do(func() { close(stopped) })
		}
	}
	defer release()
	_ = s.RequestStop(0)
	for ev := range s.Events() {
		switch ev.Type {
		case guardian.EventCleanupFailed:
			// The guardian keeps the identity and retries; a start
			// of another identity need not wait for it.
			c.logf("the tree of identity %q could not be confirmed stopped; its guardian keeps retrying: %v", s.Identity(), ev.Err)
			release()
		case guardian.EventStopped, guardian.EventLost:
			if ev.Err != nil {
				c.logf("the tree of identity %q stopped: %v", s.Identity(), ev.Err)
			} else {
				c.logf("the tree of identity %q stopped", s.Identity())
			}
			release()
		}
	}
}
