package tray

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
)

// TestDetector runs rows through the detector and checks which produce a
// notice: each condition once, again after a recovery, never per retry.
func TestDetector(t *testing.T) {
	cleanup := func(msg string) *api.Error { return &api.Error{Code: api.CodeCleanupFailed, Message: msg} }
	contention := &api.Error{Code: api.CodeContention, Message: `identity "alice@relay" is held by guardian pid 7 of profile "work"`}
	crash := &api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row"}
	exited := &api.Error{Code: api.CodeExited, Message: "exit status 3"}
	const withdrawn = "(withdrawn)"
	var d detector
	for i, step := range []struct {
		row  api.Agent
		want string // title substring of the notice, "" for none
	}{
		{agent("alice", api.StateRunning, 0, nil), ""},
		{agent("alice", api.StateStopping, 0, nil), ""},
		{agent("alice", api.StateCleanupFailed, 0, cleanup("pid 777 left")), "alice would not stop"},
		{agent("alice", api.StateCleanupFailed, 0, cleanup("pid 777 left (retry 2)")), ""},
		{agent("alice", api.StateStopped, 0, cleanup("private dir: permission denied")), "alice stopped, but its cleanup failed"},
		{agent("alice", api.StateStopped, 0, nil), withdrawn}, // the cleanup's bubble goes
		{agent("alice", api.StateCleanupFailed, 0, cleanup("again")), "alice would not stop"},
		{agent("alice", api.StateStarting, 0, nil), withdrawn},
		{agent("alice", api.StateBackoff, 0, contention), "identity is in use elsewhere"},
		{agent("alice", api.StateStarting, 0, contention), ""},
		{agent("alice", api.StateBackoff, 0, contention), ""},
		{agent("alice", api.StateFailed, 0, contention), "could not get its identity"},
		{agent("bob", api.StateBackoff, 0, exited), ""},
		{agent("bob", api.StateFailed, 0, exited), "bob failed"},
		{agent("bob", api.StateFailed, 0, crash), "bob keeps crashing"},
		{agent("bob", api.StateFailed, 0, crash), ""},
		{agent("bob", api.StateStarting, 0, crash), withdrawn}, // started again by hand
		{agent("bob", api.StateFailed, 0, crash), "bob keeps crashing"},
	} {
		n, ok := d.agent(step.row)
		switch {
		case step.want == withdrawn:
			if !ok || !n.withdraw || n.Subject != "agent/"+step.row.ID {
				t.Errorf("step %d (%s %s): %+v, want the withdrawal of its last notice", i, step.row.ID, step.row.State, n)
			}
		case ok && n.withdraw:
			t.Errorf("step %d (%s %s): an unexpected withdrawal", i, step.row.ID, step.row.State)
		case step.want == "" && ok:
			t.Errorf("step %d (%s %s): unexpected notice %q", i, step.row.ID, step.row.State, n.Title)
		case step.want != "" && !ok:
			t.Errorf("step %d (%s %s): no notice, want %q", i, step.row.ID, step.row.State, step.want)
		case ok && !strings.Contains(n.Title, step.want):
			t.Errorf("step %d: notice %q, want %q", i, n.Title, step.want)
		case ok && !strings.Contains(n.Body, errorText(*step.row.Error)):
			t.Errorf("step %d: the notice does not say what happened: %q", i, n.Body)
		}
	}
	// Forgotten agents are forgotten.
	d.keep([]api.Agent{{ID: "bob"}})
	if _, ok := d.last["alice"]; ok {
		t.Error("alice is remembered after it left the config")
	}
}

// Every notice says what to do, and its key groups it by agent and kind.
func TestNoticeTexts(t *testing.T) {
	heldElsewhere := agent("a", api.StateHeldElsewhere, 0, &api.Error{Code: api.CodeContention, Message: "m"})
	heldElsewhere.Status = "held by vps (profile default) since 10:02"
	for _, c := range []struct {
		row  api.Agent
		key  string
		todo string
	}{
		{agent("a", api.StateCleanupFailed, 0, &api.Error{Code: api.CodeCleanupFailed, Message: "m"}), "a/cleanup", "kill -9"},
		{agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeCrashLoop, Message: "m"}), "a/crash_loop", "tether logs a"},
		{agent("a", api.StateBackoff, 0, &api.Error{Code: api.CodeContention, Message: "m"}), "a/contention", "Stop the other holder"},
		{agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "m"}), "a/failed", "start it again"},
		{heldElsewhere, "a/contention", "held by vps (profile default) since 10:02"},
	} {
		var d detector
		n, ok := d.agent(c.row)
		if !ok || n.Key != c.key || !strings.Contains(n.Body, c.todo) {
			t.Errorf("%s: %+v, want key %q and a body saying %q", c.row.State, n, c.key, c.todo)
		}
	}
	n := lostNotice("", true)
	if n.Key != "service/lost" || !strings.Contains(n.Body, "Start service") || !strings.Contains(n.Body, "`tether service start`") {
		t.Errorf("lost, default profile: %+v", n)
	}
	if n := lostNotice("work", true); !strings.Contains(n.Body, `profile "work"`) || !strings.Contains(n.Body, "`tether --profile work service start`") {
		t.Errorf("lost, profile work: %+v", n)
	}
	// Nothing installed: no advice to start what is not there.
	if n := lostNotice("", false); strings.Contains(n.Body, "service start") || !strings.Contains(n.Body, "`tether service run`") {
		t.Errorf("lost, nothing installed: %+v", n)
	}
}

// After the manager restarted the service, the notice names the agents
// whose trees are new, or says that every one kept running.
func TestRestartedNotice(t *testing.T) {
	before := map[string]int{"a": 10, "b": 11, "c": 12}
	now := []api.Agent{{ID: "c", PID: 99}, {ID: "a", PID: 98}, {ID: "b", PID: 11}, {ID: "d", PID: 5}}
	got := restartedAgents(before, now)
	if strings.Join(got, ",") != "a,c" {
		t.Errorf("restarted %v, want a, c", got)
	}
	if n := restartedNotice("work", got); n.Urgency != urgencyLow || !strings.Contains(n.Body, `profile "work"`) || !strings.Contains(n.Body, "2 agents were restarted with it: a, c.") {
		t.Errorf("%+v", n)
	}
	if n := restartedNotice("", nil); !strings.Contains(n.Body, "every agent kept running") {
		t.Errorf("%+v", n)
	}
}
