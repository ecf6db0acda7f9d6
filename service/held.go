package service

import (
	"errors"
	"fmt"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/wire"
)

// A guardian whose cleanup failed keeps the identity and retries, even
// once its service is gone. A service started after that one died finds
// it in the identity's owner record (guardian.Inspect) and shows the
// agent as cleanup_failed, with the guardian's cause, until it lets go:
// a stopped row with no error would hide an unkillable process that
// still holds the identity. The record is read again on a timer that
// backs off like the guardian's own retries, and only while a guardian
// is so held.
const (
	heldRecheckMin = time.Second
	heldRecheckMax = 30 * time.Second
)

// inspectHeld returns the holding of the agent's identity by a guardian
// of this profile that this service did not start and whose cleanup
// failed, or nil.
func (a *actor) inspectHeld() *guardian.Holding {
	h, err := guardian.Inspect(a.c.opts.Paths.LockDir, a.cfg.Identity)
	if err != nil || h == nil || h.Cleanup == nil || h.Profile != a.c.opts.Paths.Profile {
		return nil
	}
	return h
}

// heldBy returns the holding a start that failed with err ran into,
// when it is such a guardian's.
func (a *actor) heldBy(err error) *guardian.Holding {
	se, ok := errors.AsType[*guardian.StartError](err)
	if !ok || se.Code != wire.CodeContention || se.Holder == nil || se.Holder.Cleanup == nil || se.Holder.Profile != a.c.opts.Paths.Profile {
		return nil
	}
	return &guardian.Holding{Holder: *se.Holder}
}

// watchHeld shows h on the row and reads the record again later.
func (a *actor) watchHeld(h *guardian.Holding) {
	first := a.held == nil
	a.held = h
	a.row.PID, a.row.GuardianPID = h.AgentPID, h.GuardianPID
	a.setState(api.StateCleanupFailed, &api.Error{Code: api.CodeCleanupFailed, Message: fmt.Sprintf(
		"guardian pid %d, left by an earlier run of the service, could not confirm the agent's tree dead; it keeps the identity and retries: %v",
		h.GuardianPID, guardian.CleanupErr(h.Cleanup))})
	if first {
		a.heldWait = heldRecheckMin
	} else {
		a.heldWait = min(2*a.heldWait, heldRecheckMax)
	}
	a.stopHeldTimer()
	a.heldTimer = time.NewTimer(a.heldWait)
	a.heldC = a.heldTimer.C
}

// recheckHeld reads the owner record again: still held, it waits on;
// let go, the agent is stopped, or started when it is wanted.
func (a *actor) recheckHeld() {
	if h := a.inspectHeld(); h != nil {
		a.watchHeld(h)
		return
	}
	a.held = nil
	a.row.PID, a.row.GuardianPID = 0, 0
	a.setState(api.StateStopped, nil)
	if a.want {
		a.start()
	}
}

func (a *actor) stopHeldTimer() {
	if a.heldTimer != nil {
		a.heldTimer.Stop()
	}
	a.heldC = nil
}
