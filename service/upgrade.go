package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/buildinfo"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/service/upgrade"
)

// The controller's side of an upgrade (I9): the API's request reaches the
// run loop (Upgrade, upgradeCalls), which has an upgrade.Upgrader make
// it; the upgrader asks the controller through upgradeControl for the
// offer, the freeze of every actor and the record of the outcome. The
// actors' side is in handover_actor.go, the successor's in
// run_takeover.go.

// upgradeCall is an upgrade asked for over the API, for the run loop.
type upgradeCall struct {
	req   api.UpgradeRequest
	reply chan upgradeReply
}

type upgradeReply struct {
	ans api.UpgradeAnswer
	err error
}

// Upgrade implements localapi.Backend: the run loop checks the binary and
// answers, then hands over.
func (c *Controller) Upgrade(ctx context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error) {
	call := upgradeCall{req: req, reply: make(chan upgradeReply, 1)}
	select {
	case c.upgrades <- call:
	case <-c.quit:
		return api.UpgradeAnswer{}, &api.Error{Code: api.CodeUpgrade, Message: "the service is shutting down"}
	case <-ctx.Done():
		return api.UpgradeAnswer{}, ctx.Err()
	}
	select {
	case r := <-call.reply:
		return r.ans, r.err
	case <-ctx.Done():
		return api.UpgradeAnswer{}, ctx.Err()
	}
}

// upgradeCalls delivers the upgrades asked for over the API to the run
// loop.
func (c *Controller) upgradeCalls() <-chan upgradeCall { return c.upgrades }

// answer is how the run loop's upgrader answers call.
func (call upgradeCall) answer(ans api.UpgradeAnswer, err error) {
	call.reply <- upgradeReply{ans: ans, err: err}
}

// setUpgrade records the last upgrade for Status.
func (c *Controller) setUpgrade(u api.Upgrade) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.service.Upgrade = &u
}

// upgradeControl is the controller as an upgrade asks things of it.
type upgradeControl struct{ c *Controller }

var _ upgrade.Controller = upgradeControl{}

func (u upgradeControl) Offer() upgrade.Offer { return u.c.offer() }
func (u upgradeControl) Freeze(ctx context.Context) (*upgrade.Frozen, error) {
	return u.c.freeze(ctx)
}
func (u upgradeControl) SetUpgrade(up api.Upgrade) { u.c.setUpgrade(up) }
func (u upgradeControl) Build() string             { return u.c.serviceInfo().Build }
func (u upgradeControl) Status() api.Status        { return u.c.Status() }

// freeze stops every actor where nothing is in flight and detaches its
// session, lets go of the warm guardians, and writes the queued run
// records.
func (c *Controller) freeze(ctx context.Context) (*upgrade.Frozen, error) {
	if c.leases != nil {
		// While the sessions are attached: the guardians get the
		// deadline of a renewal made now (D210).
		c.leases.renewNow(ctx)
	}
	c.mu.Lock()
	acts := make([]*actor, 0, len(c.actors))
	for _, a := range c.cfg.Agents {
		if act, ok := c.actors[a.ID]; ok {
			acts = append(acts, act)
		}
	}
	cfg := upgrade.Config{Path: c.cfg.Path, Source: c.cfg.Source}
	c.mu.Unlock()
	frozen := make([]*frozenActor, len(acts)) // in the config's order
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i, act := range acts {
		wg.Go(func() {
			reply := make(chan *frozenActor, 1)
			select {
			case act.cmds <- command{kind: cmdFreeze, freeze: reply}:
			case <-act.done:
				mu.Lock()
				errs = append(errs, fmt.Errorf("agent %q ended", act.id))
				mu.Unlock()
				return
			}
			frozen[i] = <-reply
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// The actors still busy freeze later and are thawed then.
		go func() { <-done; c.thaw(frozen, nil) }()
		return nil, fmt.Errorf("agents still busy after %s: %w", human.Duration(upgrade.FreezeTimeout), ctx.Err())
	}
	if len(errs) > 0 {
		c.thaw(frozen, nil)
		return nil, errors.Join(errs...)
	}
	var reap []int
	if upgrade.Separate {
		c.pool.Close()
	} else {
		// Not waited for here: they exit on EOF, and this very
		// process, after execve, reaps them.
		reap = c.pool.Release()
	}
	c.flushRuns()
	f := &upgrade.Frozen{Config: cfg, Reap: reap, Thaw: func() { c.thaw(frozen, reap) }}
	if c.leases != nil {
		f.Lease = c.leases.handover()
	}
	for _, fa := range frozen {
		f.Agents = append(f.Agents, fa.state)
	}
	return f, nil
}

// thaw lets every frozen actor go on, with a new pool, and reaps the
// warm guardians let go.
func (c *Controller) thaw(frozen []*frozenActor, reap []int) {
	c.pool = guardian.NewPool(c.opts.Executable)
	reapLater(reap, false)
	for _, fa := range frozen {
		if fa != nil {
			close(fa.thaw)
		}
	}
}

// flushRuns returns once every run record queued before it is written.
func (c *Controller) flushRuns() {
	done := make(chan struct{})
	select {
	case c.runs <- stateWrite{done: done}:
		<-done
	case <-c.quit:
	}
}

// offer says what a handover would carry, for the new binary's check.
func (c *Controller) offer() upgrade.Offer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var versions []int
	for _, act := range c.actors {
		if v := act.guardianVersion.Load(); v > 0 {
			versions = append(versions, int(v))
		}
	}
	return upgrade.NewOffer(upgrade.Config{Path: c.cfg.Path, Source: c.cfg.Source}, versions)
}

// serviceInfo returns what Status says of the service process.
func (c *Controller) serviceInfo() api.Service {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.service
}

// ServiceInfo describes this process for Status: the binary it runs
// (its version, and the commit and date its build information holds, as
// `tether version` says them) and when it began to serve.
func ServiceInfo(exe, version string) api.Service {
	in := buildinfo.Get()
	return api.Service{Version: version, Commit: in.Commit, Date: in.Date, Modified: in.Modified,
		Executable: exe, Started: time.Now().UTC(), Build: upgrade.SelfBuild()}
}

// globalArgs are the global flags the service was started with, for a
// command of its successor binary.
func globalArgs(p Paths) []string {
	args := []string{"--profile", p.Profile}
	if p.ConfigSet {
		args = append(args, "--config", p.Config)
	}
	return args
}
