package service

import (
	"fmt"

	"github.com/tether-dev/tether/api"
)

// The service's log tells what happened to each agent, one line an event
// (D206): a parking (a crash loop or another failure), a cleanup failure
// and its end, a contention for the identity (held here by another
// profile or tether, or held elsewhere through etcd) and its end. A
// retry that changes only the message, or the state between the
// retries of one contention, writes nothing.

// rowCondition is what about an agent's row is worth a line of the log.
type rowCondition uint8

const (
	condNone rowCondition = iota
	// condFailed: failed, not started again until someone starts it.
	condFailed
	// condCleanupHeld: cleanup_failed: its tree could not be confirmed
	// dead, and its identity stays held.
	condCleanupHeld
	// condCleanupLeft: stopped, but its cleanup left something.
	condCleanupLeft
	// condContention: its identity is held by another profile or
	// tether on this machine, and the start is retried.
	condContention
	// condElsewhere: its identity is held by another host or profile
	// in etcd, and it starts when that one lets go.
	condElsewhere
)

// conditionOf is the condition of row a.
func conditionOf(a api.Agent) rowCondition {
	switch {
	case a.State == api.StateFailed:
		return condFailed
	case a.State == api.StateCleanupFailed:
		return condCleanupHeld
	case a.State == api.StateHeldElsewhere:
		return condElsewhere
	case a.Error == nil:
		return condNone
	case a.Error.Code == api.CodeCleanupFailed && a.State == api.StateStopped:
		return condCleanupLeft
	case a.Error.Code == api.CodeContention && (a.State == api.StateBackoff || a.State == api.StateStarting):
		return condContention
	}
	return condNone
}

// rowEvent is the line of the log that a change of an agent's row from
// prev to next calls for, or "" for none.
func rowEvent(prev, next api.Agent) string {
	was, is := conditionOf(prev), conditionOf(next)
	if was == is {
		return ""
	}
	id := next.ID
	msg := ""
	if next.Error != nil {
		msg = next.Error.Message
	}
	switch is {
	case condFailed:
		what := "failed"
		if next.Error != nil {
			what = fmt.Sprintf("failed (%s): %s", next.Error.Code, msg)
			if next.Error.Code == api.CodeCrashLoop {
				what = "crash loop: " + msg
			}
		}
		if !next.Enabled {
			return fmt.Sprintf("agent %q: %s", id, what)
		}
		return fmt.Sprintf("agent %q: %s; parked: not started again until someone starts it", id, what)
	case condCleanupHeld:
		return fmt.Sprintf("agent %q: cleanup failed: %s; its identity %q stays held, and tether keeps retrying", id, msg, next.Identity)
	case condCleanupLeft:
		return fmt.Sprintf("agent %q: stopped, but its cleanup failed: %s", id, msg)
	case condContention:
		return fmt.Sprintf("agent %q: its identity %q is held here by someone else: %s; retrying", id, next.Identity, msg)
	case condElsewhere:
		return fmt.Sprintf("agent %q: its identity %q is held elsewhere: %s; it starts here when that one lets go", id, next.Identity, next.Status)
	}
	// An end.
	switch was {
	case condCleanupHeld:
		return fmt.Sprintf("agent %q: the cleanup failure is over: its processes are gone and its identity is free (now %s)", id, next.State)
	case condContention, condElsewhere:
		return fmt.Sprintf("agent %q: its identity %q is no longer held by another (now %s)", id, next.Identity, next.State)
	}
	return ""
}
