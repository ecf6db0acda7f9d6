package service

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

// TestRowEventOncePerEvent: a line when a condition begins or ends, none
// for a retry that changes only the message or the state between
// retries.
func TestRowEventOncePerEvent(t *testing.T) {
	cont := func(s api.State, msg string) api.Agent {
		return api.Agent{ID: "a", Identity: "a@x", State: s, Error: &api.Error{Code: api.CodeContention, Message: msg}}
	}
	held := func(msg string) api.Agent {
		return api.Agent{ID: "a", Identity: "a@x", State: api.StateCleanupFailed, Error: &api.Error{Code: api.CodeCleanupFailed, Message: msg}}
	}
	running := api.Agent{ID: "a", Identity: "a@x", State: api.StateRunning}
	for _, tc := range []struct {
		name       string
		prev, next api.Agent
		want       string // a part of the line; "" for none
	}{
		{"contention begins", running, cont(api.StateBackoff, "held by pid 7"), `its identity "a@x" is held here by someone else: held by pid 7; retrying`},
		{"a contention retry", cont(api.StateBackoff, "held by pid 7"), cont(api.StateStarting, "held by pid 8"), ""},
		{"contention ends", cont(api.StateStarting, "held"), running, "no longer held by another (now running)"},
		{"cleanup fails", running, held("1 process still alive"), "cleanup failed: 1 process still alive"},
		{"a cleanup retry", held("1 process"), held("2 processes"), ""},
		{"cleanup failure ends", held("1"), api.Agent{ID: "a", State: api.StateStopped}, "the cleanup failure is over"},
		{"a crash loop parks", running, api.Agent{ID: "a", State: api.StateFailed, Enabled: true, Error: &api.Error{Code: api.CodeCrashLoop, Message: "failed 5 times"}},
			`agent "a": crash loop: failed 5 times; parked: not started again until someone starts it`},
		{"a failed start parks", api.Agent{ID: "a", State: api.StateStarting}, api.Agent{ID: "a", State: api.StateFailed, Enabled: true, Error: &api.Error{Code: api.CodeSpawn, Message: "not found"}},
			`agent "a": failed (spawn): not found; parked`},
		{"held elsewhere", cont(api.StateStarting, "held"), api.Agent{ID: "a", Identity: "a@x", State: api.StateHeldElsewhere, Status: "held by vps since 10:02", Error: &api.Error{Code: api.CodeContention}},
			`its identity "a@x" is held elsewhere: held by vps since 10:02; it starts here when that one lets go`},
		{"a start, a stop", api.Agent{ID: "a", State: api.StateStarting}, running, ""},
	} {
		got := rowEvent(tc.prev, tc.next)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want a line with %q", tc.name, got, tc.want)
		}
	}
}
