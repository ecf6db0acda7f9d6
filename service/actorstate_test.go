package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// Every step of every actor in this package's tests is checked against
// the table: one it does not list fails the test run.
func init() {
	illegalTransition = func(a *actor, from, to actorState, step string) {
		panic(fmt.Sprintf("agent %q: %s moved it from %s to %s, which transitions does not list", a.id, step, from, to))
	}
}

func TestActorStateOfFlags(t *testing.T) {
	s := &guardian.Session{}
	for _, tc := range []struct {
		name string
		a    *actor
		want actorState
	}{
		{"nothing", &actor{}, stateIdle},
		{"not wanted, no tree", &actor{want: false}, stateIdle},
		{"a start scheduled", &actor{want: true, timerC: make(chan time.Time)}, stateRetrying},
		{"waiting for dependencies", &actor{want: true, depWait: true}, stateWaitingDeps},
		{"parked", &actor{want: true, parked: true}, stateParked},
		{"held elsewhere", &actor{want: true, held: &guardian.Holding{}}, stateHeld},
		{"spawned, not ready", &actor{session: s, pending: true}, stateStarting},
		{"ready", &actor{session: s}, stateRunning},
		{"stop asked while not ready", &actor{session: s, pending: true, stopAsked: true}, stateStopping},
		{"stop asked", &actor{session: s, stopAsked: true, restartArm: true}, stateStopping},
		// A tree outranks the flags of the time before it.
		{"a tree while parked", &actor{session: s, parked: true}, stateRunning},
		{"held and parked", &actor{held: &guardian.Holding{}, parked: true}, stateHeld},
		{"waiting for what it needs", &actor{want: true, offline: func() {}}, stateOffline},
	} {
		if got := tc.a.state(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestActorTransitions(t *testing.T) {
	all := []actorState{stateIdle, stateWaitingDeps, stateRetrying, stateParked, stateHeld, stateStarting, stateRunning, stateStopping, stateEnded, stateOffline}
	for _, s := range all {
		if _, ok := transitions[s]; !ok {
			t.Errorf("%s has no entry in the table", s)
		}
		for _, to := range transitions[s] {
			if to == s {
				t.Errorf("%s lists itself: staying is always allowed", s)
			}
		}
		if !legalTransition(s, s) {
			t.Errorf("%s may not stay", s)
		}
	}
	// Every state can be reached from the first one, and every state
	// but the last can reach the end.
	reach := func(from actorState) map[actorState]bool {
		seen := map[actorState]bool{from: true}
		for queue := []actorState{from}; len(queue) > 0; queue = queue[1:] {
			for _, to := range transitions[queue[0]] {
				if !seen[to] {
					seen[to] = true
					queue = append(queue, to)
				}
			}
		}
		return seen
	}
	fromIdle := reach(stateIdle)
	for _, s := range all {
		if !fromIdle[s] {
			t.Errorf("%s cannot be reached from %s", s, stateIdle)
		}
		if !reach(s)[stateEnded] {
			t.Errorf("%s cannot reach %s", s, stateEnded)
		}
	}
	for _, tc := range []struct {
		from, to actorState
		legal    bool
		why      string
	}{
		{stateIdle, stateRunning, true, "a start"},
		{stateIdle, stateWaitingDeps, true, "a start that waits for its dependencies"},
		{stateIdle, stateStopping, true, "an adopted tree whose entry changed"},
		{stateRetrying, stateStarting, true, "the timer's start"},
		{stateStarting, stateRunning, true, "ready"},
		{stateRunning, stateStarting, true, "attached again, its check still to pass"},
		{stateRunning, stateParked, true, "a crash loop"},
		{stateStopping, stateRunning, true, "a restart"},
		{stateStopping, stateEnded, true, "a removal"},
		{stateParked, stateEnded, true, "a shutdown"},
		{stateRunning, stateEnded, false, "a tree is stopped before its actor ends"},
		{stateStarting, stateEnded, false, "a tree is stopped before its actor ends"},
		{stateRunning, stateWaitingDeps, false, "a running agent stops before it waits for anything"},
		{stateRunning, stateHeld, false, "its own guardian holds the identity"},
		{stateStopping, stateParked, true, "a restart whose new start failed"},
		{stateWaitingDeps, stateParked, true, "a required agent that failed"},
		{stateIdle, stateParked, true, "a start that failed: not started again (D204)"},
		{stateEnded, stateIdle, false, "the end is final"},
	} {
		if got := legalTransition(tc.from, tc.to); got != tc.legal {
			t.Errorf("%s -> %s legal %v, want %v (%s)", tc.from, tc.to, got, tc.legal, tc.why)
		}
	}
}
