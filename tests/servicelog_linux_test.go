package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestServiceLogTellsTheStory: the log of a real service says, one line
// each, what happened: a crash loop, a failed start parked, a contention
// for an identity another profile holds (however many retries), a
// reload with what it changed, an upgrade from which version to which.
func TestServiceLogTellsTheStory(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	other := filepath.Join(w.dir, "other.yaml")
	writeFile(t, other, fmt.Sprintf(`agents:
  - id: holder
    identity: shared@relay
    command: [/bin/sh, -c, 'exec sleep 1000', %s]
    autostart: true
`, m))
	w.startServiceArgs("other", "--config", other)
	w.waitState("other", "holder", api.StateRunning)

	agents := fmt.Sprintf(`agents:
  - id: loop
    command: [/bin/sh, -c, 'exit 3', %[1]s]
    restart: {policy: always, backoff: 50ms, crash_loop: {failures: 3, within: 10m}}
    autostart: true
  - id: nocmd
    command: [/nonexistent/tether-e2e-agent, %[1]s]
    autostart: true
  - id: contender
    identity: shared@relay
    command: [/bin/sh, -c, 'exec sleep 1000', %[1]s]
    autostart: true
`, m)
	w.writeConfig(agents)
	svc := w.startService("default")
	w.waitAgent("loop", crashLoopWithin, crashLooped)
	w.waitState("default", "nocmd", api.StateFailed)
	// Retried from 20 ms, doubling to 1 s: by now, several times.
	w.waitAgent("contender", 10*time.Second, func(a api.Agent) bool {
		return a.Error != nil && a.Error.Code == api.CodeContention
	})

	w.writeConfig(agents + fmt.Sprintf(`  - id: late
    command: [/bin/sh, -c, 'exec sleep 1000', %s]
`, m))
	w.mustRun("reload")
	if r := w.run(time.Minute, "service", "upgrade"); r.code != 0 {
		t.Fatalf("service upgrade: exit %d: %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
	}
	w.mustRun("stop", "contender")

	log := svc.output()
	version := strings.Fields(w.mustRun("version").stdout)[1]
	for _, line := range []string{
		`agent "loop": crash loop: failed 3 times within 10m (`,
		`; last: the agent exited: exit status 3; parked: not started again until someone starts it`,
		`agent "nocmd": failed (spawn): `,
		`agent "contender": its identity "shared@relay" is held here by someone else: `,
		`: added late`,
		fmt.Sprintf(`from tether %s (build `, version),
	} {
		if n := strings.Count(log, line); n != 1 {
			t.Errorf("%d lines with %q in the service's log, want 1", n, line)
		}
	}
	if t.Failed() {
		t.Logf("service log:\n%s", log)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
