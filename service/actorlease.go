package service

import (
	"context"
	"errors"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/lease"
)

// The pauses between tries to hold an identity in etcd while it cannot be
// reached: they double from the first to the last.
const (
	leaseRetryMin = time.Second
	leaseRetryMax = 30 * time.Second
)

// leased says whether the agent's identity is held in etcd too: the
// config has a lease section, and the agent does not say lease: local.
func (a *actor) leased() bool { return a.c.leases != nil && !a.cfg.LeaseLocal }

// leaseFailed handles an identity that could not be held in etcd: held
// elsewhere, it waits for the holder; etcd out of reach, it tries again
// after a pause.
func (a *actor) leaseFailed(err error) {
	if held, ok := errors.AsType[*lease.HeldElsewhere](err); ok {
		a.waitElsewhere(held)
		return
	}
	e := &api.Error{Code: api.CodeLease, Message: "holding the identity in etcd: " + err.Error()}
	a.answerStarts(e)
	a.leaseRetry(e)
}

// leaseRetry shows e and schedules another start.
func (a *actor) leaseRetry(e *api.Error) {
	if a.leaseDelay == 0 {
		a.leaseDelay = leaseRetryMin
	} else {
		a.leaseDelay = min(2*a.leaseDelay, leaseRetryMax)
	}
	a.setState(api.StateBackoff, e)
	a.schedule(a.leaseDelay)
}

// waitElsewhere shows who holds the identity and waits, on an etcd
// watch, for it to let go. Whoever asked for the start hears of the
// contention now (exit 4).
func (a *actor) waitElsewhere(held *lease.HeldElsewhere) {
	a.stopElsewhere()
	ctx, cancel := context.WithCancel(context.Background())
	a.elsewhere, a.elsewhereStop = held, cancel
	a.elsewhereC = a.c.leases.released(ctx, held)
	e := &api.Error{Code: api.CodeContention, Message: held.Error()}
	a.row.Status = heldText(held)
	a.setState(api.StateHeldElsewhere, e)
	a.answerStarts(e)
}

// elsewhereGone starts the agent whose holder elsewhere let go, if it is
// still wanted.
func (a *actor) elsewhereGone() {
	a.stopElsewhere()
	a.row.Status = ""
	if a.want && a.session == nil {
		a.start()
		return
	}
	a.setState(api.StateStopped, nil)
}

// stopElsewhere ends the wait for a holder elsewhere, if any.
func (a *actor) stopElsewhere() {
	if a.elsewhereStop != nil {
		a.elsewhereStop()
	}
	a.elsewhere, a.elsewhereC, a.elsewhereStop = nil, nil, nil
}

// releaseLease lets the identity go in etcd, if it is held there.
func (a *actor) releaseLease() {
	if a.leased() {
		a.c.leases.release(a.id)
	}
}

// holdAgain holds in etcd, again, the identity of a tree that the service
// before handed over: under the lease it resumed, the key and its fencing
// token are the same, and the guardian gets the renewals from now on.
// Held by another since (the lease expired during the handover), the tree
// is stopped now rather than at its deadline.
func (a *actor) holdAgain() {
	if !a.leased() {
		return
	}
	_, _, err := a.c.leases.acquire(a.id, a.cfg.Identity)
	if err == nil {
		a.c.leases.run(a.id, a.session)
		return
	}
	a.c.logf("agent %q: holding its identity in etcd again after the upgrade: %v; its guardian stops it by its deadline", a.id, err)
	if _, ok := errors.AsType[*lease.HeldElsewhere](err); ok {
		a.requestStop()
	}
}

// dropHold gives up the hold of a start that failed before its guardian
// went ahead: once etcd has answered, the identity is let go if it was
// held.
func (a *actor) dropHold(hold <-chan holding) {
	if hold == nil {
		return
	}
	if h := <-hold; h.err == nil {
		a.releaseLease()
	}
}
