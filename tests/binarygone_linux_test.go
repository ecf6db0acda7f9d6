package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// A service whose binaries are gone from under it (a package removed
// while its prerm could not stop it, a build directory cleaned) is not
// left half-working: it stops its agents cleanly, a start either runs
// the agent whole or fails with a clear error that leaves nothing
// behind, and it quits with nothing left running.
func TestServiceWhoseBinaryIsGone(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	body := "agents:\n" + agentYAML("a", "a@relay", m+"-a", true)
	ids := []string{"b", "c", "d", "e"}
	for _, id := range ids {
		body += agentYAML(id, id+"@relay", m+"-"+id, false)
	}
	w.writeConfig(body)
	dir := filepath.Join(w.dir, "gone")
	exe := copyBinary(t, tether, dir, "tether")
	guardian := copyBinary(t, tetherGuardian, dir, filepath.Base(tetherGuardian))
	svc := w.startServiceWith(exe, "default")
	w.waitState("default", "a", api.StateRunning)
	for _, f := range []string{exe, guardian} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}

	// Stops work: the guardians that run were started before.
	if r := w.run(30*time.Second, "stop", "a"); r.code != 0 {
		t.Fatalf("stop a with the binaries gone: exit %d: %s%s\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	waitSessions(t, m+"-a", 0)

	// Each start either runs its agent whole or fails saying why, with
	// no tree, lock or half-started agent left behind.
	for _, id := range ids {
		r := w.run(30*time.Second, "start", id)
		row := w.status("default")[id]
		switch {
		case r.code == 0 && row.State == api.StateRunning:
			waitSessions(t, m+"-"+id, 1)
			t.Logf("start %s: runs (pid %d)", id, row.PID)
		case r.code != 0 && row.State == api.StateFailed:
			waitSessions(t, m+"-"+id, 0)
			if !strings.Contains(r.stderr, "tether start "+id+": ") || row.Error == nil {
				t.Errorf("start %s failed without saying why: %s (row %+v)", id, r.stderr, row)
			}
			t.Logf("start %s: %s", id, strings.TrimSpace(r.stderr))
		default:
			t.Errorf("start %s: exit %d, row %s: half-started\nstdout %s\nstderr %s", id, r.code, row.State, r.stdout, r.stderr)
		}
	}

	// Quit: every agent stopped, nothing of tether left.
	if r := w.run(60*time.Second, "service", "stop"); r.code != 0 {
		t.Fatalf("service stop with the binaries gone: exit %d: %s%s\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	select {
	case <-svc.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the service did not exit after service stop:\n%s", svc.output())
	}
	for _, id := range append(ids, "a") {
		waitSessions(t, m+"-"+id, 0)
	}
}
