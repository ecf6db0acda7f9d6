package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/state"
)

// surviveYAML is politeYAML with survive_service_crash.
func surviveYAML(id, bash, marker string, survive time.Duration) string {
	return politeYAML(id, bash, marker, true) + fmt.Sprintf("    survive_service_crash: %v\n", survive)
}

// survive_service_crash: the service is SIGKILLed; the agent that opted
// in keeps running with its identity held (the other goes, I2), shows as
// adoptable while no service runs, is refused to another profile, and is
// adopted by the relaunched service: the same tree, never a second one.
func TestSurviveServiceCrash(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + surviveYAML("x", bash, m+"-x", 30*time.Second) + politeYAML("y", bash, m+"-y", true))
	svc := w.startService("default")
	x := w.waitState("default", "x", api.StateRunning)
	w.waitState("default", "y", api.StateRunning)
	exactlyOnce(t, 0, map[string]int{m + "-x": 1, m + "-y": 1})

	begin := time.Now()
	svc.kill()
	// y goes as always; x stays.
	if !testproc.UntilEvery(time.Second+ownerGoneMargin, 2*time.Millisecond, func() bool { return len(procsWith(m+"-y")) == 0 }) {
		t.Fatalf("y is still there %v after the service's SIGKILL: %s", time.Since(begin), describe(procsWith(m+"-y")))
	}
	exactlyOnce(t, 200*time.Millisecond, map[string]int{m + "-x": 1})
	if len(w.heldLocks()) != 1 {
		t.Fatalf("held locks %v, want x's alone", w.heldLocks())
	}

	// No service: status exits 3 and shows x waiting.
	var (
		rows []statusRow
		r    result
	)
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		r = w.run(10*time.Second, "status", "--json")
		var out struct {
			Agents []statusRow `json:"agents"`
		}
		_ = json.Unmarshal([]byte(r.stdout), &out)
		rows = out.Agents
		return r.code == 3 && len(rows) == 1
	}) {
		t.Fatalf("status with no service: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	if a := rows[0]; a.ID != "x" || a.State != api.StateAdoptable || a.PID != x.PID || !strings.Contains(a.Status, "waiting to be adopted until") {
		t.Errorf("status shows %+v, want x adoptable with pid %d", a, x.PID)
	}
	if r := w.run(10*time.Second, "status"); r.code != 3 || !strings.Contains(r.stdout, "adoptable") {
		t.Errorf("status table: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	// Another profile with the same identity does not adopt it: its start
	// meets contention.
	other := w.startService("other")
	if r := w.run(10*time.Second, "--profile", "other", "start", "--no-wait", "x"); r.code != 4 {
		t.Errorf("another profile's start of x: exit %d (%s), want 4 (contention)", r.code, r.stderr)
	}
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1})
	if err := w.client("other").Quit(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-other.done

	w.startService("default")
	after := w.waitState("default", "x", api.StateRunning)
	w.waitState("default", "y", api.StateRunning)
	if after.PID != x.PID {
		log, _ := os.ReadFile(filepath.Join(w.dir, "state", "tether", "default", "logs", "x.log"))
		t.Errorf("x after the relaunch runs as pid %d, was %d: not adopted\n%s", after.PID, x.PID, log)
	}
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1})
	if r := w.run(10*time.Second, "status"); r.code != 0 || strings.Contains(r.stdout, "adoptable") {
		t.Errorf("status after the adoption: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	stopX(t, w, m)
}

// Nobody adopts in time: the tree is stopped when the window closes,
// as at any owner's death, only later; a relaunched service starts the
// agent anew.
func TestSurviveServiceCrashWindowCloses(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const window = time.Second
	w.writeConfig("agents:\n" + surviveYAML("x", bash, m+"-x", window))
	svc := w.startService("default")
	x := w.waitState("default", "x", api.StateRunning)
	exactlyOnce(t, 0, map[string]int{m + "-x": 1})
	begin := time.Now()
	svc.kill()
	took := w.waitOwnerGone("default", m, begin, window+time.Second+ownerGoneMargin)
	if took < window {
		t.Errorf("the tree went %v after the service's death, before its %v window closed", took, window)
	}
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
	w.startService("default")
	again := w.waitState("default", "x", api.StateRunning)
	if again.PID == x.PID {
		t.Errorf("x kept its pid %d across a closed window", x.PID)
	}
	exactlyOnce(t, 200*time.Millisecond, map[string]int{m + "-x": 1})
}

// The agent was disabled while its tree waited to be adopted (its
// intent says stopped): the relaunched service adopts the tree and stops
// it at once, rather than leave it running until the window closes.
func TestSurviveServiceCrashDisabledMeanwhile(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + surviveYAML("x", bash, m+"-x", time.Minute))
	svc := w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	svc.kill()
	exactlyOnce(t, 200*time.Millisecond, map[string]int{m + "-x": 1})
	st, err := state.Open(filepath.Join(w.dir, "state", "tether", "default"), platform.OpenAppendNoFollow)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetEnabled("x", false); err != nil {
		t.Fatal(err)
	}
	st.Close()
	begin := time.Now()
	w.startService("default")
	took := w.waitOwnerGone("default", m, begin, 10*time.Second)
	if row := w.waitState("default", "x", api.StateStopped); row.Error != nil {
		t.Errorf("x after its adoption and stop: %+v", row.Error)
	}
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
	t.Logf("the disabled agent's waiting tree was adopted and stopped %v after the relaunch", took)
}

// crashedWithX runs x, an agent with survive_service_crash (a minute),
// and the agents others returns, under a service, and SIGKILLs the
// service once x runs: x's tree (marker m+"-x") waits to be adopted.
func crashedWithX(t *testing.T, others func(bash, m string) string) (w *world, bash, m, entry string, x statusRow) {
	t.Helper()
	w, bash, _ = crashWorld(t)
	m = uniqueMarker()
	cleanupTrees(t, m)
	entry = surviveYAML("x", bash, m+"-x", time.Minute)
	w.writeConfig("agents:\n" + entry + others(bash, m))
	svc := w.startService("default")
	x = w.waitState("default", "x", api.StateRunning)
	svc.kill()
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1})
	return w, bash, m, entry, x
}

func noOthers(string, string) string { return "" }

// stopX stops x, and checks that nothing of its tree, nor any guardian,
// is left.
func stopX(t *testing.T, w *world, m string) {
	t.Helper()
	w.mustRun("stop", "x")
	exactlyOnce(t, 0, map[string]int{m + "-x": 0})
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
}

// reportsUnclaimed checks that the service's log reports the tree of
// identity that no entry claimed.
func reportsUnclaimed(t *testing.T, svc *service, identity string) {
	t.Helper()
	if out := svc.output(); !strings.Contains(out, fmt.Sprintf("%q", identity)) || !strings.Contains(out, "no agent of the config") {
		t.Errorf("the service log does not report the stopped tree of %s:\n%s", identity, out)
	}
}

// The identity of x changed while its tree waited: the relaunched
// service stops the old tree (no entry claims its identity) and starts x
// under the new one; never two trees of x side by side once the old is
// stopped.
func TestSurviveServiceCrashIdentityChanged(t *testing.T) {
	w, _, m, entry, x := crashedWithX(t, noOthers)
	w.writeConfig("agents:\n" + strings.Replace(entry, "identity: x@relay", "identity: x2@relay", 1))
	svc := w.startService("default")
	after := w.waitState("default", "x", api.StateRunning)
	if after.PID == x.PID || after.Identity != "x2@relay" {
		t.Errorf("x after the relaunch: %+v, want a new tree of x2@relay (old pid %d)", after, x.PID)
	}
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1})
	if held := w.heldLocks(); len(held) != 1 {
		t.Errorf("held locks %v, want x2's alone", held)
	}
	reportsUnclaimed(t, svc, "x@relay")
	stopX(t, w, m)
}

// x was removed from the config while its tree waited: the relaunched
// service stops the tree and says so; it does not run on, invisible,
// until its window closes.
func TestSurviveServiceCrashAgentRemoved(t *testing.T) {
	w, bash, m, _, _ := crashedWithX(t, func(bash, m string) string { return politeYAML("y", bash, m+"-y", true) })
	w.writeConfig("agents:\n" + politeYAML("y", bash, m+"-y", true))
	begin := time.Now()
	svc := w.startService("default")
	w.waitState("default", "y", api.StateRunning)
	// x's stop timeout is 1 s, and it stops at the first SIGTERM.
	if !testproc.UntilEvery(5*time.Second, 2*time.Millisecond, func() bool { return len(procsWith(m+"-x")) == 0 }) {
		t.Fatalf("x's tree still runs %v after the relaunch: %s", time.Since(begin), describe(procsWith(m+"-x")))
	}
	t.Logf("the removed agent's tree was stopped %v after the relaunch", time.Since(begin).Round(time.Millisecond))
	exactlyOnce(t, 0, map[string]int{m + "-y": 1})
	if held := w.heldLocks(); len(held) != 1 {
		t.Errorf("held locks %v, want y's alone", held)
	}
	reportsUnclaimed(t, svc, "x@relay")
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
}

// x's command and environment changed while its tree waited: the
// relaunched service adopts the tree, stops it and starts x anew from
// its entry as it is now, and says so, in its log and in x's status.
func TestSurviveServiceCrashEntryChanged(t *testing.T) {
	w, _, m, entry, x := crashedWithX(t, noOthers)
	changed := strings.Replace(entry, "echo started;", "echo started again;", 1) + "    env: {ROTATED: secret-2}\n"
	w.writeConfig("agents:\n" + changed)
	svc := w.startService("default")
	var after statusRow
	testproc.Eventually(t, 15*time.Second, func() bool {
		after = w.waitState("default", "x", api.StateRunning)
		return after.PID != x.PID
	}, "x still runs as pid %d, started from its old entry", x.PID)
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1})
	if env := readProc(t, after.PID, "environ"); !strings.Contains(env, "\nROTATED=secret-2\n") && !strings.HasPrefix(env, "ROTATED=secret-2\n") {
		t.Errorf("the new tree does not have the new environment:\n%s", env)
	}
	if !strings.Contains(after.Status, "config entry changed") {
		t.Errorf("x's status %q does not say why it was restarted", after.Status)
	}
	if out := svc.output(); !strings.Contains(out, "config entry changed") {
		t.Errorf("the service log does not say x was restarted into its new entry:\n%s", out)
	}
	stopX(t, w, m)
}
