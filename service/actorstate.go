package service

import (
	"fmt"
	"slices"
)

// actorState names what an actor is doing: the combinations of its
// session and of its flags that handle and event branch on. It is read
// from them (actor.state); what a step may change it to is the table
// transitions.
//
// Beside the state, an actor carries what no state decides alone:
// its intent (want), what follows a stop (restartArm: start again;
// ending: end), the cleanup still owed for a dead guardian (unclaimed:
// the identity is to be freed; leftover: what it left could not be
// stopped), and, at the service's start, whether a tree that outlived
// the service before is to be adopted and stopped (adoptIdle).
type actorState uint8

const (
	// stateIdle: no tree and nothing under way; the row says stopped
	// or failed.
	stateIdle actorState = iota
	// stateWaitingDeps: to start once its dependencies are ready
	// (depWait).
	stateWaitingDeps
	// stateRetrying: a start is scheduled (the restart policy's
	// backoff, or a retry after contention).
	stateRetrying
	// stateParked: failed (a crash loop, a start that failed, an ending
	// its policy does not restart), and not started again until
	// someone asks or its entry changes (parked).
	stateParked
	// stateHeld: the identity is held by a guardian that is not this
	// service's, which could not confirm its tree dead (held).
	stateHeld
	// stateHeldElsewhere: the identity is held in etcd by another host
	// or profile; a watch wakes the actor when it lets go (elsewhere).
	stateHeldElsewhere
	// stateStarting: a tree runs whose readiness check has not passed
	// (pending).
	stateStarting
	// stateRunning: a tree runs, ready.
	stateRunning
	// stateStopping: a stop was sent to the tree's guardian
	// (stopAsked).
	stateStopping
	// stateEnded: removed from the config or shut down; the actor's
	// goroutine has returned.
	stateEnded
	// stateOffline: to start once what it needs is reachable
	// (offline).
	stateOffline
)

var actorStateNames = [...]string{
	stateIdle: "idle", stateWaitingDeps: "waiting-deps", stateRetrying: "retrying",
	stateParked: "parked", stateHeld: "held", stateHeldElsewhere: "held-elsewhere", stateStarting: "starting",
	stateRunning: "running", stateStopping: "stopping", stateEnded: "ended",
	stateOffline: "offline",
}

func (s actorState) String() string {
	if int(s) < len(actorStateNames) {
		return actorStateNames[s]
	}
	return fmt.Sprintf("actorState(%d)", s)
}

// fromNoTree is where one step may leave an actor that had no tree of
// its own: a tree that runs (or an adopted one, stopped at once when its
// entry changed), a wait for dependencies, a retry, a held identity
// (here, or in etcd elsewhere),
// nothing (a stop), parked (a start that failed), or the end of a
// removed or shut down actor.
var fromNoTree = []actorState{stateIdle, stateWaitingDeps, stateRetrying, stateParked, stateHeld, stateHeldElsewhere, stateStarting, stateRunning, stateStopping, stateEnded,
	stateOffline}

// transitions lists, for each state, the states that one step of the
// actor (a command, a report of its guardian, its timer, a change of a
// dependency's row, a recheck of a held identity) may leave it in.
// Staying is always allowed; stateEnded is final.
var transitions = map[actorState][]actorState{
	// A start, a stop (which ends a removed or shut down actor).
	stateIdle: besides(stateIdle, fromNoTree),
	// Its dependencies are ready, or one failed; a stop.
	stateWaitingDeps: besides(stateWaitingDeps, fromNoTree),
	// The timer, a start: a start; a stop.
	stateRetrying: besides(stateRetrying, fromNoTree),
	// A start, a restart, a stop unpark it; a shutdown or removal ends
	// it.
	stateParked: besides(stateParked, fromNoTree),
	// The holder let go: a start, or nothing; a stop.
	stateHeld: besides(stateHeld, fromNoTree),
	// The holder elsewhere let go: a start (which may find it held
	// again); a stop.
	stateHeldElsewhere: besides(stateHeldElsewhere, fromNoTree),
	// Ready; a stop; the tree ended by itself: stopped, failed,
	// restarted after a backoff, or parked as a crash loop.
	stateStarting: {stateRunning, stateStopping, stateIdle, stateRetrying, stateParked, stateOffline},
	// As starting; a guardian attached again (an upgrade's successor)
	// may say a check is still to pass.
	stateRunning: {stateStarting, stateStopping, stateIdle, stateRetrying, stateParked, stateOffline},
	// Stopped: ended, left stopped, or started again (a restart).
	stateStopping: besides(stateStopping, fromNoTree),
	stateEnded:    nil,
	// What it needs is reachable: a start; the machine resumed: a
	// start; a stop.
	stateOffline: besides(stateOffline, fromNoTree),
}

// besides is states without self: staying needs no entry.
func besides(self actorState, states []actorState) []actorState {
	return slices.DeleteFunc(slices.Clone(states), func(s actorState) bool { return s == self })
}

// legalTransition says whether one step may move an actor from one state
// to the other.
func legalTransition(from, to actorState) bool {
	return from == to || slices.Contains(transitions[from], to)
}

// state reads the actor's state from its session and flags.
func (a *actor) state() actorState {
	switch {
	case a.session != nil && a.stopAsked:
		return stateStopping
	case a.session != nil && a.pending:
		return stateStarting
	case a.session != nil:
		return stateRunning
	case a.held != nil:
		return stateHeld
	case a.elsewhere != nil:
		return stateHeldElsewhere
	case a.parked:
		return stateParked
	case a.depWait:
		return stateWaitingDeps
	case a.offline != nil:
		return stateOffline
	case a.timerC != nil:
		return stateRetrying
	}
	return stateIdle
}

// illegalTransition is told of a step the table does not allow. The
// service reports it in its log and goes on: the table describes the
// actor, it does not drive it. The package's tests make it fail.
var illegalTransition = func(a *actor, from, to actorState, step string) {
	a.c.logf("agent %q: internal: %s moved it from %s to %s, which the actor's transitions do not list", a.id, step, from, to)
}

// moved checks the step that took the actor from the state from to its
// state now (stateEnded when it ended).
func (a *actor) moved(from actorState, step string, ended bool) {
	to := a.state()
	if ended {
		to = stateEnded
	}
	if !legalTransition(from, to) {
		illegalTransition(a, from, to, step)
	}
}
