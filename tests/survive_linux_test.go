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
	deadline := time.Now().Add(time.Second + ownerGoneMargin)
	for len(procsWith(m+"-y")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("y is still there %v after the service's SIGKILL: %s", time.Since(begin), describe(procsWith(m+"-y")))
		}
		time.Sleep(2 * time.Millisecond)
	}
	exactlyOnce(t, 200*time.Millisecond, map[string]int{m + "-x": 1})
	if len(w.heldLocks()) != 1 {
		t.Fatalf("held locks %v, want x's alone", w.heldLocks())
	}

	// No service: status exits 3 and shows x waiting.
	deadline = time.Now().Add(10 * time.Second)
	var rows []statusRow
	for {
		r := w.run(10*time.Second, "status", "--json")
		var out struct {
			Agents []statusRow `json:"agents"`
		}
		_ = json.Unmarshal([]byte(r.stdout), &out)
		if r.code == 3 && len(out.Agents) == 1 {
			rows = out.Agents
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status with no service: exit %d, %s%s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(5 * time.Millisecond)
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
	w.mustRun("stop", "x")
	exactlyOnce(t, 0, map[string]int{m + "-x": 0})
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running: %v", left)
	}
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
	st, err := state.Open(filepath.Join(w.dir, "state", "tether", "default"))
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
