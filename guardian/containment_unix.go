//go:build unix

package guardian

import (
	"context"
	"errors"
	"fmt"
	"time"

	pscope "github.com/tether-dev/tether/platform/scope"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/wire"
)

// scopeWait bounds the exchange with the user's systemd manager: one that
// does not answer in time is as good as none.
const scopeWait = 5 * time.Second

// cgroupOrScope returns the strongest containment the agent can get, name
// naming its cgroup (see wire.Containment): a cgroup of its own below the
// guardian's when that is writable; else the same below a transient scope
// with Delegate=yes that the user's systemd manager, on the session bus
// of the agent's environment, puts the guardian in (and then scope names
// that unit); else none, and the session and the subreapers hold the
// tree. Whatever is not the strongest rung is logged with the reason.
//
// An agent with survive_crash asks for the scope first: a cgroup below
// the guardian's is inside its owner's when the owner runs under a
// service manager (the login service), which kills everything in it when
// the owner dies, the guardian too, and the window would not hold.
func (g *guardian) cgroupOrScope(name string) (cg *punix.Cgroup, scope string) {
	if g.req.NoCgroup {
		g.logf("containment: %s (cgroups are turned off for this agent)", wire.ContainmentSession)
		return nil, ""
	}
	if g.req.SurviveCrash > 0 {
		cg, scope, err := g.scoped(name)
		if err == nil {
			return cg, scope
		}
		g.logf("survive_crash: no scope of its own (%v): under a service manager that kills its unit's processes, the tree goes with the service", err)
	}
	cg, err := g.ownCgroup(name)
	if err == nil {
		return cg, ""
	}
	noCgroup := err
	if g.req.SurviveCrash > 0 {
		g.logf("containment: %s: no cgroup of its own (%v), and no scope", wire.ContainmentSession, noCgroup)
		return nil, ""
	}
	bus := pscope.SessionBusAddress(func(k string) (string, bool) { return lookupEnv(g.req.Env, k) })
	unit := pscope.UnitName(name)
	ctx, cancel := context.WithTimeout(context.Background(), scopeWait)
	defer cancel()
	if err := pscope.Enter(ctx, bus, unit, "tether guardian of "+quote(g.req.Identity)); err != nil {
		g.logf("containment: %s: no cgroup of its own (%v) and no scope from a user manager (%v)", wire.ContainmentSession, noCgroup, err)
		return nil, ""
	}
	if cg, err = punix.NewCgroup(name); err != nil {
		g.logf("containment: %s: in scope %s, but no cgroup in it: %v", wire.ContainmentSession, unit, err)
		return nil, ""
	}
	g.logf("containment: %s: no cgroup of its own (%v); in scope %s of the user's systemd manager", wire.ContainmentScope, noCgroup, unit)
	return cg, unit
}

// scoped puts the guardian in a transient scope of the user's manager,
// and the agent's cgroup in it.
func (g *guardian) scoped(name string) (*punix.Cgroup, string, error) {
	bus := pscope.SessionBusAddress(func(k string) (string, bool) { return lookupEnv(g.req.Env, k) })
	unit := pscope.UnitName(name)
	ctx, cancel := context.WithTimeout(context.Background(), scopeWait)
	defer cancel()
	if err := pscope.Enter(ctx, bus, unit, "tether guardian of "+quote(g.req.Identity)); err != nil {
		return nil, "", err
	}
	cg, err := punix.NewCgroup(name)
	if err != nil {
		return nil, "", fmt.Errorf("in scope %s, but no cgroup in it: %w", unit, err)
	}
	g.logf("containment: %s: in scope %s of the user's systemd manager, outside its owner's unit (survive_crash)", wire.ContainmentScope, unit)
	return cg, unit, nil
}

// ownCgroup makes the agent's cgroup below the guardian's own, which
// prepareOS found while the guardian waited for its request.
func (g *guardian) ownCgroup(name string) (*punix.Cgroup, error) {
	switch {
	case errors.Is(g.cgroupErr, punix.ErrNoCgroup):
		return nil, g.cgroupErr
	case g.cgroupErr != nil:
		return nil, fmt.Errorf("%w: %v", punix.ErrNoCgroup, g.cgroupErr)
	}
	return punix.NewCgroupIn(g.cgroupDir, name)
}
