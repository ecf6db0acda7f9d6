package service

import (
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/upgrade"
)

// frozenActor is an actor stopped at a point where nothing is in flight,
// its session detached, until thaw is closed: the handover failed and
// the actor goes on. A handover that goes through ends the process (on
// Unix, replaces it) with the actor still frozen.
type frozenActor struct {
	a     *actor
	state upgrade.Agent
	thaw  chan struct{}
}

// freeze detaches the actor's session, draining what the guardian
// reported before (which may end the session, or start a new one: then
// that one is detached), and returns what its successor needs.
func (a *actor) freeze() upgrade.Agent {
	for a.session != nil {
		s := a.session
		// The actor waits for the reader itself, draining its events
		// meanwhile: no goroutine per agent for the wait, which at
		// hundreds of agents was most of the freeze.
		d := s.BeginDetach()
		var h *guardian.Handoff
	wait:
		for {
			select {
			case ev, ok := <-a.events:
				a.absorb(ev, ok)
			case pending := <-d.Parked():
				h = d.Handoff(pending)
				break wait
			case <-s.Done():
				_ = d.Ended()
				break wait
			}
		}
		// What was read before the reader parked, or its final
		// events.
		for drained := false; !drained; {
			select {
			case ev, ok := <-a.events:
				a.absorb(ev, ok)
				drained = !ok
			default:
				drained = true
			}
		}
		if h != nil && a.session == s {
			st := a.handover()
			st.Tether = &upgrade.Tether{Version: s.Version(), Guardian: platform.Ref{Pid: s.GuardianPID(), Start: s.Ready().GuardianStart},
				Ready: s.Ready(), Pending: h.Pending, Handoff: h}
			return st
		}
		if h != nil {
			// The session ended and a new one began while it was
			// detached: impossible, as nothing is read once parked;
			// hand the old one back all the same.
			h.Resume()
		}
	}
	return a.handover()
}

// absorb applies an event that arrives during a freeze.
func (a *actor) absorb(ev guardian.Event, ok bool) {
	if !ok {
		a.events = nil
		return
	}
	// A stop or removal cannot be under way (the API is paused and
	// reloads wait for the handover), so the actor does not end here.
	_ = a.event(ev)
}

// handover is the actor's state, without its tether.
func (a *actor) handover() upgrade.Agent {
	st := upgrade.Agent{
		ID: a.id, Row: a.row, Want: a.want, Parked: a.parked, Failures: a.failures, Backoff: a.backoff,
		StartedAt: a.startedAt, Contention: a.contention, ContDelay: a.contDelay,
		DepWait: a.depWait, Pending: a.pending, StopAsked: a.stopAsked, StopSince: a.stopSince,
		RestartArm: a.restartArm, DepErr: a.depErr, Leftover: a.leftover, Unclaimed: a.unclaimed,
		Offline: a.offline != nil, Elsewhere: a.elsewhere != nil,
	}
	if a.timerC != nil {
		st.Due = a.timerDue
	}
	a.c.mu.Lock()
	st.Leader = a.c.trees[a.id].Leader
	a.c.mu.Unlock()
	return st
}

// resume takes over what the actor before knew before run starts; its
// session, if any, comes on session (see awaitSession).
func (a *actor) resume(st upgrade.Agent, session chan attachResult) {
	a.row = st.Row
	a.row.Identity = a.cfg.Identity
	a.want, a.parked, a.failures, a.backoff = st.Want, st.Parked, st.Failures, st.Backoff
	a.startedAt, a.contention, a.contDelay = st.StartedAt, st.Contention, st.ContDelay
	a.depWait, a.pending = st.DepWait, st.Pending
	a.stopAsked, a.stopSince, a.restartArm = st.StopAsked, st.StopSince, st.RestartArm
	a.depErr, a.leftover, a.unclaimed = st.DepErr, st.Leftover, st.Unclaimed
	a.awaiting, a.leader = session, st.Leader
	if !st.Due.IsZero() {
		a.schedule(max(time.Until(st.Due), 0))
	}
	if st.Offline {
		a.goOffline()
	}
	if st.Elsewhere {
		// The watch on the holder's key was the service before's: a
		// start now takes the key if the holder let go meanwhile, or
		// waits for it again on a watch of this process.
		a.schedule(0)
	}
}

// awaitSession waits for the session of the tether handed over, first
// thing in run. A tether that could not be attached is a guardian lost:
// it tears down on its own, and the agent starts again by its intent.
func (a *actor) awaitSession() {
	if a.awaiting == nil {
		return
	}
	r := <-a.awaiting
	a.awaiting = nil
	if r.err == nil {
		a.setSession(r.session)
		tree := treeLed(r.session.Ready(), a.leader)
		a.c.setTree(a.id, &tree)
		a.holdAgain()
		return
	}
	a.c.setTree(a.id, nil)
	a.row.PID, a.row.GuardianPID = 0, 0
	a.pending, a.stopAsked = false, false
	e := &api.Error{Code: api.CodeInternal, Message: "its guardian could not be taken over at the upgrade: " + r.err.Error()}
	if a.want {
		a.setState(api.StateBackoff, e)
		a.schedule(0)
	} else {
		a.setState(api.StateStopped, e)
	}
}

// attached applies a guardian's answer to a new owner: after an upgrade
// it says what the record said; after an adoption it is all this service
// knows of the agent.
func (a *actor) attached(ev guardian.Event) {
	r := ev.Ready
	if r == nil {
		return
	}
	a.row.PID, a.row.GuardianPID = r.AgentPID, r.GuardianPID
	if ev.MainPID > 0 {
		a.row.PID = ev.MainPID
	}
	if ev.Status != "" {
		a.row.Status = ev.Status
	}
	wasPending := a.pending
	a.pending = r.Pending
	switch {
	case a.stopAsked:
		a.c.publish(a.row)
	case a.pending:
		a.setState(api.StateStarting, a.row.Error)
	case wasPending || a.row.State != api.StateRunning:
		a.setState(api.StateRunning, nil)
		a.settleStarts()
	default:
		a.c.publish(a.row)
	}
}

// frozen freezes the actor, answers on reply, and waits for the thaw.
func (a *actor) frozen(reply chan<- *frozenActor) {
	fa := &frozenActor{a: a, state: a.freeze(), thaw: make(chan struct{})}
	reply <- fa
	<-fa.thaw
	if t := fa.state.Tether; t != nil {
		t.Handoff.Resume()
	}
}

// resumeAll makes the actors of an upgrade's successor, each from what
// the service before knew.
func (c *Controller) resumeAll(cfg *config.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var acts []*actor
	for _, a := range cfg.Agents {
		act := newActor(c, a, nil)
		if r, ok := c.opts.resumed[a.ID]; ok {
			act.resume(r.state, r.session)
			if t := r.state.Tether; t != nil {
				// Known from the record: a status with usage asked
				// before the session is made again measures the tree.
				c.trees[a.ID] = treeLed(t.Ready, r.state.Leader)
			}
		}
		c.actors[a.ID] = act
		c.rows[a.ID] = act.row
		acts = append(acts, act)
	}
	for _, act := range acts {
		go act.run()
	}
}
