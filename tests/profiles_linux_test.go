package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// Two profiles of one user are separate services: each has its own state
// directory, socket, logs and agents (here both name their agent "x", with
// different identities), and acting in one leaves the other alone.
func TestProfilesAreSeparate(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	configs := map[string]string{}
	for _, p := range []string{"a", "b"} {
		configs[p] = filepath.Join(w.dir, "config", p+".yaml")
		body := "agents:\n" + agentYAML("x", "x-"+p+"@relay", m+"-"+p, true) + agentYAML("only-"+p, "only-"+p+"@relay", m+"-only-"+p, false)
		if err := os.WriteFile(configs[p], []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svcA := w.startServiceArgs("a", "--config", configs["a"])
	svcB := w.startServiceArgs("b", "--config", configs["b"])
	xa := w.waitState("a", "x", api.StateRunning)
	xb := w.waitState("b", "x", api.StateRunning)
	waitSessions(t, m+"-a", 1)
	waitSessions(t, m+"-b", 1)
	if xa.Identity != "x-a@relay" || xb.Identity != "x-b@relay" || xa.PID == xb.PID {
		t.Fatalf("a's x %+v, b's x %+v", xa, xb)
	}

	// Separate sockets, state directories and logs.
	for p, svc := range map[string]*service{"a": svcA, "b": svcB} {
		if fi, err := os.Stat(w.socket(p)); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Errorf("profile %s has no socket at %s: %v", p, w.socket(p), err)
		}
		st, err := w.client(p).Status(t.Context())
		if err != nil || st.Profile != p || st.ServicePID != svc.cmd.Process.Pid {
			t.Errorf("the socket of %s answers for profile %q, pid %d (want %d): %v", p, st.Profile, st.ServicePID, svc.cmd.Process.Pid, err)
		}
		other := map[string]string{"a": "b", "b": "a"}[p]
		waitFileContains(t, filepath.Join(w.dir, "state", "tether", p, "logs", "x.log"), "started")
		// Each status shows its own agents only.
		rows := w.status(p)
		if len(rows) != 2 || rows["x"].Identity != "x-"+p+"@relay" || rows["only-"+other].ID != "" {
			t.Errorf("--profile %s status: %+v", p, rows)
		}
		if r := w.run(10*time.Second, "--profile", p, "status"); strings.Contains(r.stdout, "x-"+other+"@relay") || strings.Contains(r.stdout, "only-"+other) {
			t.Errorf("--profile %s status shows %s's agents:\n%s", p, other, r.stdout)
		}
		// Logs and actions do not reach the other profile's agents.
		if r := w.run(10*time.Second, "--profile", p, "logs", "only-"+other); r.code != 1 || !strings.Contains(r.stderr, "only-"+other) {
			t.Errorf("--profile %s logs only-%s: exit %d: %s", p, other, r.code, r.stderr)
		}
		if r := w.run(10*time.Second, "--profile", p, "start", "only-"+other); r.code != 1 {
			t.Errorf("--profile %s start only-%s: exit %d: %s", p, other, r.code, r.stderr)
		}
	}
	if n := len(sessionsOf(m + "-only-")); n != 0 {
		t.Errorf("%d trees of agents started through the wrong profile", n)
	}
	if !strings.Contains(svcA.output(), `profile "a"`) || !strings.Contains(svcB.output(), `profile "b"`) {
		t.Errorf("service logs:\na: %s\nb: %s", svcA.output(), svcB.output())
	}

	// Stopping x in a leaves b's x running, the same process.
	w.mustRun("--profile", "a", "stop", "x")
	waitSessions(t, m+"-a", 0)
	if got := w.status("b")["x"]; got.State != api.StateRunning || got.PID != xb.PID {
		t.Errorf("b's x after a's stop: %+v, want running as pid %d", got, xb.PID)
	}
	if n := len(sessionsOf(m + "-b")); n != 1 {
		t.Errorf("%d trees of b's x after a's stop", n)
	}
	if a := w.status("a")["x"]; a.State != api.StateStopped {
		t.Errorf("a's x after its stop: %+v", a)
	}
	// And the intent was recorded in a's state only.
	if enabled, ok := w.intent("a", "x"); !ok || enabled {
		t.Errorf("a's state: x enabled=%v recorded=%v, want disabled", enabled, ok)
	}
	if enabled, _ := w.intent("b", "x"); !enabled {
		t.Errorf("b's state: x is not enabled after a's stop")
	}
}
