package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// crashLoopWithin bounds the wait for a crash loop of the real service:
// six quick endings, with backoffs of 0.1, 0.2, 0.4, 0.8 and 1.6 s
// between them.
const crashLoopWithin = 60 * time.Second

// crashingYAML is an agent that appends a line to the file starts at
// each start and exits 3 at once; tag is an argument of its command that
// does nothing, to change the command.
func crashingYAML(starts, tag string) string {
	return fmt.Sprintf(`agents:
  - id: loop
    command: [/bin/sh, -c, 'echo start >> "$0"; exit 3', %s, %s]
    restart: {policy: always, backoff: 100ms, crash_loop: {failures: 6, within: 10m}}
    autostart: true
`, starts, tag)
}

// startsOf counts the lines of the file starts.
func startsOf(t *testing.T, starts string) int {
	t.Helper()
	b, err := os.ReadFile(starts)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// waitAgent polls the status of the default profile until agent id's
// row satisfies ok, for at most within.
func (w *world) waitAgent(id string, within time.Duration, ok func(api.Agent) bool) api.Agent {
	w.t.Helper()
	var st api.Status
	var err error
	var row api.Agent
	if !testproc.UntilEvery(within, 20*time.Millisecond, func() bool {
		st, err = w.client("default").Status(context.Background())
		for _, a := range st.Agents {
			if err == nil && a.ID == id && ok(a) {
				row = a
				return true
			}
		}
		return false
	}) {
		w.t.Fatalf("agent %s: the row wanted not seen within %v: %+v %v", id, within, st.Agents, err)
	}
	return row
}

func crashLooped(a api.Agent) bool {
	return a.State == api.StateFailed && a.Error != nil && a.Error.Code == api.CodeCrashLoop
}

// notRestarted checks that the parked agent stays failed and is not
// started again for a while: longer than the shortest backoff twice.
func (w *world) notRestarted(starts string, n int) {
	w.t.Helper()
	if testproc.UntilEvery(2500*time.Millisecond, 10*time.Millisecond, func() bool { return startsOf(w.t, starts) != n }) {
		w.t.Errorf("%d starts, want %d: the parked agent was started again", startsOf(w.t, starts), n)
	}
	if a := w.status("default")["loop"]; a.State != api.StateFailed || a.Error == nil || a.Error.Code != api.CodeCrashLoop {
		w.t.Errorf("row %+v %+v: want failed with crash_loop", a, a.Error)
	}
}

// TestCrashLoopParkingSurvivesServiceKill: an agent parked by a crash
// loop is not started again by a service relaunched after a SIGKILL, nor
// by a reload that leaves its entry as it is; a reload that changes its
// command starts it again, with a fresh count.
func TestCrashLoopParkingSurvivesServiceKill(t *testing.T) {
	t.Parallel() // the other parking test runs beside it
	w := newWorld(t)
	starts := filepath.Join(w.dir, "starts")
	w.writeConfig(crashingYAML(starts, "v1"))
	svc := w.startService("default")
	parked := w.waitAgent("loop", crashLoopWithin, crashLooped)
	n := startsOf(t, starts)
	if n != 6 {
		t.Errorf("%d starts until parked, want 6", n)
	}

	// The row says parked only once the disk does: kill at once.
	svc.kill()
	w.waitServiceLockFree("default")
	w.startService("default")
	again := w.status("default")["loop"]
	if again.State != api.StateFailed || again.Error == nil || !again.Error.Equal(*parked.Error) || !again.Since.Equal(parked.Since) {
		t.Errorf("after a SIGKILL and a relaunch: %+v %+v, want %+v %+v", again, again.Error, parked, parked.Error)
	}
	if on, _ := w.intent("default", "loop"); !on {
		t.Errorf("the parked agent is no longer enabled")
	}
	w.notRestarted(starts, n)

	// An upgrade in place keeps the parking, in the row and on disk.
	if r := w.run(time.Minute, "service", "upgrade"); r.code != 0 {
		t.Fatalf("service upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if a := w.status("default")["loop"]; a.State != api.StateFailed || a.Error == nil || !a.Error.Equal(*parked.Error) {
		t.Errorf("after an upgrade: %+v %+v, want %+v", a, a.Error, parked.Error)
	}
	w.notRestarted(starts, n)

	w.mustRun("reload")
	w.notRestarted(starts, n)

	w.writeConfig(crashingYAML(starts, "v2"))
	w.mustRun("reload")
	w.waitAgent("loop", 10*time.Second, func(a api.Agent) bool {
		return a.State == api.StateBackoff && a.Error != nil && a.Error.Code == api.CodeExited
	})
	if got := startsOf(t, starts); got != n+1 {
		t.Errorf("%d starts after the reload, want %d", got, n+1)
	}
	w.mustRun("stop", "loop")
}

// TestReloadResetsCrashLoop: in the service that parked it, a reload that
// changes the agent's command gives it a fresh count: its next ending is
// followed by a restart, not by parking again.
func TestReloadResetsCrashLoop(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	starts := filepath.Join(w.dir, "starts")
	w.writeConfig(crashingYAML(starts, "v1"))
	w.startService("default")
	w.waitAgent("loop", crashLoopWithin, crashLooped)
	n := startsOf(t, starts)

	w.mustRun("reload")
	w.notRestarted(starts, n)

	w.writeConfig(crashingYAML(starts, "v2"))
	reloaded := time.Now()
	w.mustRun("reload")
	// Settled after its first ending: restarted after a pause (backoff),
	// or parked again (failed) if the count went on from before.
	a := w.waitAgent("loop", 10*time.Second, func(a api.Agent) bool {
		return (a.State == api.StateBackoff || a.State == api.StateFailed) && a.Since.After(reloaded)
	})
	if a.State != api.StateBackoff || a.Error == nil || a.Error.Code != api.CodeExited {
		t.Errorf("after the reload and its first ending: %+v %+v, want backoff with exited", a, a.Error)
	}
	w.mustRun("stop", "loop")
}

// waitServiceLockFree waits until nothing holds the service lock of
// profile, for at most 5 s. A service SIGKILLed while it was starting a
// guardian (its pool starts one 25 ms after each start, and a crashing
// agent's last start is that recent) leaves a child that holds a copy of
// the lock's descriptor from its fork until its exec closes it; a
// relaunch in that moment is refused as "already running".
func (w *world) waitServiceLockFree(profile string) {
	w.t.Helper()
	path := filepath.Join(w.dir, "state", "tether", profile, "service.lock")
	var err error
	if !testproc.UntilEvery(5*time.Second, time.Millisecond, func() bool {
		var f *os.File
		if f, err = punix.OpenLockFile(path); err != nil {
			return true
		}
		err = punix.TryLock(f)
		f.Close() // releases the lock taken, if any
		return !errors.Is(err, punix.ErrLocked)
	}) || err != nil {
		w.t.Fatalf("the service lock of %s after its service was killed: %v", profile, err)
	}
}

// TestFailureParkingSurvivesServiceRestart: agents that failed to start
// (spawn) or to become ready (not_ready), whose rows say they are not
// started again, are not started again by the service stopped and run
// again; a start by hand starts them.
func TestFailureParkingSurvivesServiceRestart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	starts := filepath.Join(w.dir, "starts")
	w.writeConfig(fmt.Sprintf(`agents:
  - id: unready
    command: [/bin/sh, -c, 'echo start >> "$0"; exec sleep 1000', %s, %s]
    ready: {log: "never printed"}
    start_timeout: 500ms
    autostart: true
  - id: nocommand
    command: [/nonexistent/tether-e2e-agent, %s]
    autostart: true
`, starts, m, m))
	svc := w.startService("default")
	failedWith := func(code api.Code) func(api.Agent) bool {
		return func(a api.Agent) bool { return a.State == api.StateFailed && a.Error != nil && a.Error.Code == code }
	}
	unready := w.waitAgent("unready", 30*time.Second, failedWith(api.CodeNotReady))
	spawn := w.waitAgent("nocommand", 30*time.Second, failedWith(api.CodeSpawn))
	if n := startsOf(t, starts); n != 1 {
		t.Fatalf("%d starts of the never-ready agent, want 1", n)
	}

	svc.stop()
	w.startService("default")
	rows := w.status("default")
	for _, was := range []api.Agent{unready, spawn} {
		a := rows[was.ID]
		if a.State != api.StateFailed || a.Error == nil || !a.Error.Equal(*was.Error) || !a.Since.Equal(was.Since) {
			t.Errorf("%s after the service ran again: %s %+v since %v, want %s %+v since %v",
				was.ID, a.State, a.Error, a.Since, was.State, was.Error, was.Since)
		}
	}
	if testproc.UntilEvery(1500*time.Millisecond, 10*time.Millisecond, func() bool { return startsOf(t, starts) != 1 }) {
		t.Errorf("%d starts, want 1: the failed agent was started again by the service's restart", startsOf(t, starts))
	}

	// Started by hand, it is tried again, and parked again.
	if r := w.run(30*time.Second, "start", "unready"); r.code != 1 {
		t.Errorf("start unready: exit %d, want 1: %s%s", r.code, r.stdout, r.stderr)
	}
	if n := startsOf(t, starts); n != 2 {
		t.Errorf("%d starts after a start by hand, want 2", n)
	}
}
