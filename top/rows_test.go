package top

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestCells: a row shows the agent's pid only while its process may be
// alive, and a starting agent's row what it waits for.
func TestCells(t *testing.T) {
	since := time.Now()
	for _, c := range []struct {
		a        api.Agent
		pid, msg string
	}{
		{api.Agent{ID: "a", State: api.StateRunning, PID: 42}, "42", ""},
		{api.Agent{ID: "b", State: api.StateCleanupFailed, PID: 43, Error: &api.Error{Code: api.CodeCleanupFailed,
			Message: "cleanup failed (tree_alive): 1 process(es) still alive after SIGKILL: 777 (state S)", Left: []api.Process{{PID: 777, State: "S"}}}},
			"-", "pid 777 (state S) still alive after SIGKILL (cleanup_failed)"},
		{api.Agent{ID: "c", State: api.StateFailed, PID: 44, Error: &api.Error{Code: api.CodeNotReady, Message: "not ready within 1s"}}, "-", "not ready within 1s (not_ready)"},
		{api.Agent{ID: "d", State: api.StateStarting, PID: 45, Waiting: &api.Waiting{For: api.WaitTCP, What: "127.0.0.1:8080", Since: since, Deadline: since.Add(time.Minute)}},
			"45", "waiting for 127.0.0.1:8080 to accept a connection (up to 60 s)"},
	} {
		got := cells(c.a)
		if got[2] != c.pid || got[len(got)-1] != c.msg {
			t.Errorf("%s: pid %q, message %q; want %q, %q", c.a.ID, got[2], got[len(got)-1], c.pid, c.msg)
		}
	}
}
