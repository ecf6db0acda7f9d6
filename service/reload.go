package service

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/state"
)

// reloadPlan is what a reload does, by agent id: each list in its
// config's order (removed in the config before, the others in the new
// one).
type reloadPlan struct {
	added     []string // new: started as intent or autostart says
	changed   []string // entry changed: restarted into the new entry if running
	removed   []string // gone: stopped, and forgotten
	unchanged []string // left alone
	// stopsFirst[id], for an agent changed or removed, lists the agents
	// changed or removed whose stop comes before its own: those that
	// depended on it (after: or requires:) in the config before, which is
	// the one their running trees follow.
	stopsFirst map[string][]string
}

// planReload compares the config before with the config after. It is
// pure: applying the plan is Reload's.
func planReload(before, after *config.Config) reloadPlan {
	p := reloadPlan{stopsFirst: map[string][]string{}}
	prev := make(map[string]config.Agent, len(before.Agents))
	for _, a := range before.Agents {
		prev[a.ID] = a
	}
	going := map[string]bool{} // changed or removed
	kept := make(map[string]bool, len(after.Agents))
	for _, a := range after.Agents {
		kept[a.ID] = true
		old, ok := prev[a.ID]
		switch {
		case !ok:
			p.added = append(p.added, a.ID)
		case sameAgent(old, a):
			p.unchanged = append(p.unchanged, a.ID)
		default:
			p.changed = append(p.changed, a.ID)
			going[a.ID] = true
		}
	}
	for _, a := range before.Agents {
		if !kept[a.ID] {
			p.removed = append(p.removed, a.ID)
			going[a.ID] = true
		}
	}
	for _, a := range before.Agents {
		if !going[a.ID] {
			continue
		}
		for _, d := range a.Deps() {
			if going[d] {
				p.stopsFirst[d] = append(p.stopsFirst[d], a.ID)
			}
		}
	}
	return p
}

// sameAgent says a reload leaves the agent as it was: every key the
// same, wherever its entry now stands in the file.
func sameAgent(a, b config.Agent) bool {
	a.Line, b.Line = 0, 0
	return reflect.DeepEqual(a, b)
}

// Reload implements localapi.Backend: load the config again and apply the
// difference (see planReload). An invalid config is rejected and the
// running one kept.
//
// The agents changed and removed are stopped together, except that an
// agent stops only once those that depended on it have; a changed agent
// is started again as soon as it has stopped, and an agent that depends
// on a changed one waits for its restart (Controller.restarting, which
// depVerdict reads). Reload answers once every stop and restart has
// settled, with what it did.
func (c *Controller) Reload(ctx context.Context) (api.Reloaded, error) {
	// Subscribers see the outcome whole: removed agents, a config error.
	defer c.publishStatus()
	// A state file the user repaired is read again before the answer,
	// so the next start or stop can save its intent; what could not be
	// saved before is saved now.
	if c.store.Err() != nil {
		_ = c.store.Reload()
	}
	c.intentMu.Lock()
	c.saveUnsaved()
	c.intentMu.Unlock()
	cfg, err := loadConfig(c.opts.Paths)
	c.mu.Lock()
	if err != nil {
		c.configErr = &api.Error{Code: api.CodeConfig, Message: err.Error()}
		c.mu.Unlock()
		c.logf("reload: the config was not applied, the running one stays: %v", err)
		return api.Reloaded{}, c.configErr
	}
	if !sameLease(c.cfg.Lease, cfg.Lease) {
		c.configErr = &api.Error{Code: api.CodeConfig, Message: cfg.Path + ": the lease section changed, which takes effect only when the service starts again (tether service stop, then start); until then the running config stays in force"}
		c.mu.Unlock()
		c.logf("reload: the config was not applied, the running one stays: %s", c.configErr.Message)
		return api.Reloaded{}, c.configErr
	}
	c.configErr = nil
	plan := planReload(c.cfg, cfg)
	done := api.Reloaded{Added: plan.added, Removed: plan.removed}
	for _, id := range plan.changed {
		if s := c.rows[id].State; s == api.StateStopped || s == api.StateFailed {
			done.Changed = append(done.Changed, id)
		} else {
			done.Restarted = append(done.Restarted, id)
		}
	}
	c.cfg = cfg
	c.deps = newDepGraph(cfg)
	entries := make(map[string]config.Agent, len(cfg.Agents))
	for _, a := range cfg.Agents {
		entries[a.ID] = a
	}
	going := make(map[string]*actor, len(plan.changed)+len(plan.removed))
	for _, id := range plan.changed {
		act := c.actors[id]
		act.setConfig(entries[id])
		going[id] = act
		c.restarting[id]++
	}
	for _, id := range plan.removed {
		going[id] = c.actors[id]
		delete(c.actors, id)
		delete(c.unsaved, id)
	}
	added := make([]config.Agent, len(plan.added))
	for i, id := range plan.added {
		added[i] = entries[id]
	}
	autostarted, unparked := c.addAgentsLocked(added)
	c.mu.Unlock()

	for _, id := range autostarted {
		_ = c.setEnabled(id, true)
	}
	for _, id := range unparked {
		c.saveParked(id, nil)
	}
	c.logf("reload of %s: %s", cfg.Path, reloadedText(done))
	return done, c.applyReload(ctx, plan, going)
}

// reloadedText is what a reload did, for the service's log: each change
// with the agents it touched ("added a, b; restarted c"), or "nothing
// changed".
func reloadedText(r api.Reloaded) string {
	var parts []string
	for _, p := range []struct {
		word string
		ids  []string
	}{{"added", r.Added}, {"restarted", r.Restarted}, {"changed", r.Changed}, {"removed", r.Removed}} {
		if len(p.ids) > 0 {
			parts = append(parts, p.word+" "+strings.Join(p.ids, ", "))
		}
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, "; ")
}

// addAgentsLocked adds the agents that a reload brought, and
// returns those whose autostart is to be saved as intent and those whose
// parking no longer holds (see parkedFor), both to be saved once c.mu
// is released. c.mu is held.
func (c *Controller) addAgentsLocked(agents []config.Agent) (autostarted, unparked []string) {
	st := c.store.State()
	for _, a := range agents {
		enabled, record := a.Autostart, a.Autostart
		var parked *state.Parked
		if s, known := st.Agents[a.ID]; known && c.store.Err() == nil {
			enabled, record = s.Enabled, false
			if parked = parkedFor(s, a); parked == nil && s.Parked != nil {
				unparked = append(unparked, a.ID)
			}
		}
		c.addLocked(a, enabled, parked)
		if enabled && record {
			// An autostart of an agent a reload added counts as
			// intent.
			autostarted = append(autostarted, a.ID)
		}
	}
	return autostarted, unparked
}

// applyReload stops the agents going (changed or removed) in the order of
// plan, restarting the changed ones, and returns once each has settled.
func (c *Controller) applyReload(ctx context.Context, plan reloadPlan, going map[string]*actor) error {
	stopped := make(map[string]chan struct{}, len(going))
	for id := range going {
		stopped[id] = make(chan struct{})
	}
	removed := make(map[string]bool, len(plan.removed))
	for _, id := range plan.removed {
		removed[id] = true
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for id, act := range going {
		wg.Go(func() {
			for _, d := range plan.stopsFirst[id] {
				select {
				case <-stopped[d]:
				case <-ctx.Done():
				}
			}
			var err error
			if removed[id] {
				err = act.do(ctx, cmdRemove)
				close(stopped[id])
				c.mu.Lock()
				delete(c.rows, id)
				c.mu.Unlock()
			} else {
				err = c.restartInto(ctx, act, stopped[id])
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// restartInto restarts act into its new config entry when it runs,
// closes stopped once its old tree is stopped (at once when none runs),
// and returns once the restart has settled. Until then, agents that
// depend on it wait (see Controller.restarting).
func (c *Controller) restartInto(ctx context.Context, act *actor, stopped chan struct{}) error {
	defer func() {
		c.mu.Lock()
		if c.restarting[act.id]--; c.restarting[act.id] <= 0 {
			delete(c.restarting, act.id)
		}
		c.pokeDependentsLocked(act.id)
		c.mu.Unlock()
	}()
	stop := make(chan error, 1)
	wait := act.begin(ctx, command{kind: cmdReconfigure, stopped: stop})
	select {
	case <-stop:
	case <-act.done:
	case <-ctx.Done():
	}
	close(stopped)
	return wait()
}

// sameLease says whether two lease sections say the same, wherever they
// are in their files.
func sameLease(a, b *config.Lease) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Line, y.Line = 0, 0
	return reflect.DeepEqual(x, y)
}
