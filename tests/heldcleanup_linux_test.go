package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// A cleanup_failed survives the service's crash (I3): the guardian that
// cannot confirm its tree dead keeps the identity and retries after its
// service was SIGKILLed, and the relaunched service shows the agent as
// cleanup_failed, naming that guardian and its cause, instead of a
// stopped row with no error; a stop exits 5. Once the tree can die and
// the guardian lets go, the agent runs again, as its intent says.
func TestCleanupFailedSurvivesServiceRestart(t *testing.T) {
	fz := newFreezer(t)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: x
    identity: x@relay
    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]
    autostart: true
    stop_timeout: 200ms
`, m))
	first := w.startService("default")
	t.Cleanup(func() { _ = fz.write("freezer.state", "THAWED") })
	x := w.waitState("default", "x", api.StateRunning)
	held, err := guardian.Inspect(filepath.Join(w.dir, "state", "tether", "locks"), "x@relay")
	if err != nil || held == nil || held.PrivateDir == "" {
		t.Fatalf("the owner record of x: %+v %v", held, err)
	}
	child := childOf(t, x.PID)
	fz.freeze(child)

	first.kill()
	log := filepath.Join(w.dir, "state", "tether", "default", "logs", "x.log")
	waitFileContains(t, log, "cleanup failed, lock kept")

	w.startService("default")
	row := w.waitState("default", "x", api.StateCleanupFailed)
	// Its private directory is the held guardian's, not a leftover.
	if _, err := os.Lstat(held.PrivateDir); err != nil {
		t.Errorf("the relaunched service removed the private directory of the guardian that holds x: %v", err)
	}
	if row.Error == nil || row.Error.Code != api.CodeCleanupFailed ||
		!strings.Contains(row.Error.Message, "guardian pid "+strconv.Itoa(x.GuardianPID)) || !strings.Contains(row.Error.Message, strconv.Itoa(child)) {
		t.Fatalf("relaunched service: %+v (error %+v), want cleanup_failed naming guardian %d and pid %d", row, row.Error, x.GuardianPID, child)
	}
	if js := w.status("default")["x"]; js.State != api.StateCleanupFailed || js.Error == nil || js.Error.Code != api.CodeCleanupFailed {
		t.Fatalf("status --json: %+v, want cleanup_failed", js)
	}
	if r := w.run(30*time.Second, "stop", "x"); r.code != 5 {
		t.Fatalf("stop of a held identity: exit %d, want 5\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.run(30*time.Second, "start", "x"); r.code != 5 {
		t.Fatalf("start of a held identity: exit %d, want 5\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Started again above: once the old guardian lets go, it runs.
	fz.thaw()
	var st api.Status
	var serr error
	if !testproc.UntilEvery(60*time.Second, 20*time.Millisecond, func() bool {
		st, serr = w.client("default").Status(context.Background())
		return serr == nil && len(st.Agents) == 1 && st.Agents[0].State == api.StateRunning && st.Agents[0].GuardianPID != x.GuardianPID
	}) {
		t.Fatalf("the agent never ran again after the thaw: %+v %v", st.Agents, serr)
	}
	if p, err := punix.Stat(child); err == nil && !p.Zombie() {
		t.Errorf("the frozen child %d outlived the retried cleanup", child)
	}
}
