package api

// State is where an agent is in its life: the "state" of an Agent row, of
// an action's answer and of `tether status --json`. The set is closed; a
// client shows a state it does not know by its name.
type State string

// The agent states, as in the command-line contract.
const (
	// StateStopped: no tree runs: the agent was stopped, or it ended
	// cleanly and its restart policy does not restart it. An error on the
	// row is what went wrong on the way: cleanup_failed for a cleanup
	// warning, internal for a guardian that died.
	StateStopped State = "stopped"
	// StateStarting: the agent is on its way but not ready: it waits for
	// the agents it comes after, its guardian has not answered yet, or it
	// runs and its readiness check has not passed (I8). The row's status
	// says which, when it is known.
	StateStarting State = "starting"
	// StateRunning: the guardian holds the identity, the agent runs and
	// it is ready: its readiness check passed, or it has none.
	StateRunning State = "running"
	// StateStopping: the guardian has been asked to stop the tree and has
	// not reported the teardown yet.
	StateStopping State = "stopping"
	// StateBackoff: the agent will be started again after a pause: it
	// ended and its restart policy covers how (the error, if any, says
	// how: exited, internal), or its identity is held elsewhere and the
	// start is retried soon (contention).
	StateBackoff State = "backoff"
	// StateFailed: the agent is wanted but will not be started again
	// until someone asks; the row's error says why (spawn, config,
	// contention, exited, crash_loop, internal, ...).
	StateFailed State = "failed"
	// StateCleanupFailed: the tree could not be confirmed dead. The
	// guardian keeps the identity locked and retries; the error is
	// cleanup_failed and names what is left.
	StateCleanupFailed State = "cleanup_failed"
	// StateHeldElsewhere: the agent is wanted, but its identity is held
	// in etcd by another host or profile (the config has a lease
	// section). It starts by itself when the holder lets go; the row's
	// status names the holder ("held by vps (profile default) since
	// 10:02") and its error is contention. Not a failure: nothing here
	// went wrong.
	StateHeldElsewhere State = "held_elsewhere"
	// StateAdoptable: its service died, and the agent has
	// survive_service_crash: its guardian keeps the tree and the identity,
	// waiting for a relaunched service of the profile to adopt it, until
	// the window closes (then the tree is stopped). Only a client shows
	// it, while no service runs (client.WaitingToBeAdopted); a service that
	// starts adopts the tree, which is running again.
	StateAdoptable State = "adoptable"
	// StateOffline: the agent is wanted but what it needs (its config's
	// needs: a host:port, or the network) is unreachable: it waits, not
	// counting toward a crash loop, and starts as soon as the need is
	// reachable again. The row's status names what it waits for.
	StateOffline State = "offline"
)

// States returns every state, in the order of an agent's life.
func States() []State {
	return []State{StateStopped, StateStarting, StateRunning, StateStopping, StateBackoff, StateFailed, StateCleanupFailed, StateHeldElsewhere, StateAdoptable, StateOffline}
}
