package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// agentYAML is an agent whose shell carries a marker on its command line
// (as $0), so the test can count its live trees.
func agentYAML(id, identity, marker string, autostart bool) string {
	return fmt.Sprintf(`  - id: %s
    identity: %s
    command: [/bin/sh, -c, "echo started; sleep 1000 & wait", %s]
    autostart: %v
    stop_timeout: 2s
`, id, identity, marker, autostart)
}

func marker(t *testing.T) string {
	return fmt.Sprintf("tether-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())
}

func waitSessions(t *testing.T, mark string, n int) []int {
	t.Helper()
	var s []int
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		s = sessionsOf(mark)
		return len(s) == n
	}) {
		t.Fatalf("%d live trees of %s, want %d", len(s), mark, n)
	}
	return s
}

// reap waits for processes adopted by this test process (guardians whose
// service was killed), so none is left a zombie.
func reap(pids ...int) {
	for _, pid := range pids {
		testproc.Until(5*time.Second, func() bool {
			var ws unix.WaitStatus
			got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			return got == pid || err != nil
		})
	}
}

func TestServiceLifecycle(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	w.writeConfig("agents:\n" + agentYAML("a", "a@relay", m+"-a", true) + agentYAML("b", "b@relay", m+"-b", false))
	svc := w.startService("default")
	a := w.waitState("default", "a", api.StateRunning)

	// status --json follows the contract's schema exactly.
	r := w.run(10*time.Second, "status", "--json")
	var raw struct {
		Agents []map[string]json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || len(raw.Agents) != 2 {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	var keys []string
	for k := range raw.Agents[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"error", "guardian_pid", "id", "identity", "pid", "restarts", "since", "state", "usage"}; !slices.Equal(keys, want) {
		t.Errorf("status --json keys %v, want %v", keys, want)
	}
	rows := w.status("default")
	if rows["a"].PID != a.PID || rows["b"].State != api.StateStopped || rows["a"].Error != nil {
		t.Errorf("rows %+v", rows)
	}
	if r := w.run(10*time.Second, "status"); r.code != 0 || !strings.Contains(r.stdout, "a@relay") || !strings.Contains(r.stdout, string(api.StateRunning)) {
		t.Errorf("status table: %d\n%s", r.code, r.stdout)
	}

	// start, stop, restart of several ids; unknown ids fail with 1.
	if r := w.run(30*time.Second, "start", "a", "b"); r.code != 0 {
		t.Fatalf("start a b: %d %s", r.code, r.stderr)
	}
	waitSessions(t, m+"-b", 1)
	if r := w.run(30*time.Second, "restart", "b"); r.code != 0 {
		t.Fatalf("restart b: %d %s", r.code, r.stderr)
	}
	if rows := w.status("default"); rows["b"].Restarts != 1 || rows["b"].State != api.StateRunning {
		t.Errorf("after restart: %+v", rows["b"])
	}
	if r := w.run(30*time.Second, "stop", "a"); r.code != 0 {
		t.Fatalf("stop a: %d %s", r.code, r.stderr)
	}
	waitSessions(t, m+"-a", 0)
	if r := w.run(10*time.Second, "start", "nope"); r.code != 1 || !strings.Contains(r.stderr, `"nope"`) {
		t.Errorf("start nope: %d %s", r.code, r.stderr)
	}

	// logs: the agent's output and tether's own lines.
	r = w.run(10*time.Second, "logs", "b", "-n", "20")
	if r.code != 0 || !strings.Contains(r.stdout, "started") || !strings.Contains(r.stdout, "tether guardian") {
		t.Errorf("logs: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// One service per profile.
	if r := w.run(10*time.Second, "service", "run"); r.code != 1 || !strings.Contains(r.stderr, fmt.Sprintf("runs as pid %d", svc.cmd.Process.Pid)) {
		t.Errorf("second service run: %d %s", r.code, r.stderr)
	}

	// check and reload: a bad config is rejected and the running one kept.
	good, _ := os.ReadFile(w.configPath())
	w.writeConfig(string(good) + "    bogus: 1\n")
	if r := w.run(10*time.Second, "check"); r.code != 1 || !strings.Contains(r.stderr, "agents.yaml:") || !strings.Contains(r.stderr, "bogus") {
		t.Errorf("check of a bad config: %d %s", r.code, r.stderr)
	}
	if r := w.run(10*time.Second, "reload"); r.code != 1 {
		t.Errorf("reload of a bad config: %d %s", r.code, r.stderr)
	}
	if w.status("default")["b"].State != api.StateRunning {
		t.Error("a rejected reload disturbed a running agent")
	}
	w.writeConfig(string(good) + agentYAML("c", "c@relay", m+"-c", true))
	if r := w.run(10*time.Second, "check"); r.code != 0 {
		t.Errorf("check: %d %s", r.code, r.stderr)
	}
	if r := w.run(30*time.Second, "reload"); r.code != 0 {
		t.Fatalf("reload: %d %s", r.code, r.stderr)
	}
	waitSessions(t, m+"-c", 1)

	// Quit: every agent stops, the service exits 0, nothing is left.
	if err := w.client("default").Quit(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.done:
	case <-time.After(20 * time.Second):
		t.Fatal("service did not exit")
	}
	if code := svc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("service exit %d:\n%s", code, svc.output())
	}
	for _, s := range []string{"-a", "-b", "-c"} {
		waitSessions(t, m+s, 0)
	}
	if left := w.privateDirs("default"); len(left) > 0 {
		t.Errorf("private dirs left: %v", left)
	}
}

// The service is SIGKILLed at steady state: its agent's tree goes with it,
// and a relaunch brings the enabled agent back exactly once.
func TestServiceCrashAndRelaunch(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, true))
	for round := range 3 {
		svc := w.startService("default")
		x := w.waitState("default", "x", api.StateRunning)
		waitSessions(t, m, 1)
		begin := time.Now()
		svc.kill()
		waitSessions(t, m, 0)
		reap(x.GuardianPID)
		t.Logf("round %d: tree gone %v after the service's SIGKILL", round, time.Since(begin))
	}
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	waitSessions(t, m, 1)
}

// Two profiles race on one identity: it never runs twice, and the loser
// answers the command line with exit 4 naming the holder.
func TestTwoProfilesOneIdentity(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	w.writeConfig("agents:\n" + agentYAML("x", "shared@relay", m, true))
	w.startService("one")
	w.startService("two")
	// Sample for a while: one tree, never two.
	seen := 0
	if testproc.UntilEvery(time.Second, 2*time.Millisecond, func() bool {
		seen = max(seen, len(sessionsOf(m)))
		return seen > 1
	}) {
		t.Fatalf("%d trees of one identity", seen)
	}
	if seen != 1 {
		t.Fatalf("no profile runs the identity")
	}
	winner, loser := "one", "two"
	if w.status("two")["x"].State == api.StateRunning {
		winner, loser = "two", "one"
	}
	r := w.run(30*time.Second, "--profile", loser, "start", "x")
	if r.code != 4 || !strings.Contains(r.stderr, fmt.Sprintf("profile %q", winner)) {
		t.Fatalf("loser start: exit %d: %s", r.code, r.stderr)
	}
	// What a person reads names tether's process, not its inner words.
	if strings.Contains(r.stderr, "guardian") || !strings.Contains(r.stderr, "held by tether pid ") {
		t.Errorf("loser start says:\n%s\nwant the holder as a tether pid, and no word of a guardian", r.stderr)
	}
	if n := len(sessionsOf(m)); n != 1 {
		t.Fatalf("%d trees after the loser's start", n)
	}
}

// A malformed state file is reported and left exactly as it is.
func TestMalformedStateFileIsReportedAndKept(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, true))
	dir := filepath.Join(w.dir, "state", "tether", "default")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	bad := []byte("{\"version\": 1,\n \"agents\": {\"x\": {\"enabled\": maybe}}}\n")
	if err := os.WriteFile(filepath.Join(dir, "state.json"), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	r := w.run(10*time.Second, "status", "--json")
	if !strings.Contains(r.stdout, "state_error") || !strings.Contains(r.stdout, "state.json") {
		t.Errorf("status --json does not report the state file:\n%s", r.stdout)
	}
	if r := w.run(30*time.Second, "stop", "x"); r.code != 1 || !strings.Contains(r.stderr, "state") {
		t.Errorf("stop with a malformed state file: %d %s", r.code, r.stderr)
	}
	waitSessions(t, m, 0)
	if b, _ := os.ReadFile(filepath.Join(dir, "state.json")); string(b) != string(bad) {
		t.Errorf("the state file was changed:\n%s", b)
	}
}

// Bad config input is named by file, line and key.
func TestCheckNamesFileLineKey(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct{ name, body, want string }{
		{"unknown key", "agents:\n  - id: a\n    command: [x]\n    comand: [y]\n", "agents.yaml:4"},
		{"duplicate id", "agents:\n  - id: a\n    command: [x]\n  - id: a\n    command: [x]\n", "agents.yaml:4"},
		{"hostile id", "agents:\n  - id: ../x\n    command: [x]\n", "agents.yaml:2"},
		{"bad duration", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: soon\n", "stop_timeout"},
		{"no command", "agents:\n  - id: a\n", "command"},
		{"malformed", "agents: [\n", "agents.yaml:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.writeConfig(c.body)
			r := w.run(10*time.Second, "check")
			if r.code != 1 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("check: exit %d, stderr %q, want %q", r.code, r.stderr, c.want)
			}
		})
	}
}

// SIGHUP reloads the config like "tether reload".
func TestSIGHUPReloads(t *testing.T) {
	w := newWorld(t)
	m := marker(t)
	w.writeConfig("agents:\n" + agentYAML("a", "a@relay", m+"-a", true))
	svc := w.startService("default")
	w.waitState("default", "a", api.StateRunning)
	w.writeConfig("agents:\n" + agentYAML("a", "a@relay", m+"-a", true) + agentYAML("b", "b@relay", m+"-b", true))
	if err := svc.cmd.Process.Signal(unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.waitState("default", "b", api.StateRunning)
	waitSessions(t, m+"-b", 1)
	// An invalid config on SIGHUP is rejected; the service runs on.
	w.writeConfig("agents: [\n")
	if err := svc.cmd.Process.Signal(unix.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var st api.Status
	var err error
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		st, err = w.client("default").Status(context.Background())
		return err == nil && st.ConfigError != nil
	}) {
		t.Fatalf("a rejected reload is not reported: %+v %v", st, err)
	}
	waitSessions(t, m+"-a", 1)
	waitSessions(t, m+"-b", 1)
}

// A service that cannot listen (its socket's path is taken by a
// directory) says so and exits 1, letting go of its lock: no panic.
func TestServiceCannotListen(t *testing.T) {
	w := newWorld(t)
	w.writeConfig("agents: []\n")
	if err := os.MkdirAll(filepath.Join(w.socket("default"), "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := w.run(20*time.Second, "service", "run")
	if r.code != 1 || strings.Contains(r.stderr, "panic") || !strings.Contains(r.stderr, "is not a socket") {
		t.Fatalf("service run with its socket's path taken: exit %d, want 1 with the reason\n%s%s", r.code, r.stdout, r.stderr)
	}
}
