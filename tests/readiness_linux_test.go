package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// freeTCPPort returns a loopback port nobody listens on right now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// watchStates records the states an agent goes through, from the event
// stream, until the test ends.
func (w *world) watchStates(profile, id string) func() []api.State {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events, err := w.client(profile).Events(ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	states := make(chan api.State, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range events {
			if err != nil {
				return
			}
			if ev.Agent != nil && ev.Agent.ID == id {
				states <- ev.Agent.State
			}
		}
	}()
	w.t.Cleanup(func() { cancel(); <-done })
	return func() []api.State {
		var out []api.State
		for {
			select {
			case s := <-states:
				if len(out) == 0 || out[len(out)-1] != s {
					out = append(out, s)
				}
			default:
				return out
			}
		}
	}
}

// redis-server --supervised systemd sends READY=1 by itself: it is
// starting until then, and "tether start" returns only once it is
// running and answers.
func TestRedisIsRunningOnlyWhenReady(t *testing.T) {
	needTools(t, "redis-server")
	w := newWorld(t)
	m := uniqueMarker()
	port := freeTCPPort(t)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: redis
    command: [redis-server, --supervised, systemd, --port, "%d", --bind, 127.0.0.1, --save, "", --appendonly, "no", --daemonize, "no", --pidfile, "", --logfile, "", --dbfilename, %s.rdb]
    ready: notify
    start_timeout: 20s
`, port, m))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	states := w.watchStates("default", "redis")
	r := w.mustRun("start", "redis")
	if !strings.Contains(r.stdout, "redis: running") {
		t.Fatalf("start answered %q, want running", r.stdout)
	}
	// Answered: it must answer at once.
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		t.Fatalf("redis does not answer right after tether start returned: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	if string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("PING answered %q", buf[:n])
	}
	row := w.waitState("default", "redis", api.StateRunning)
	if row.Error != nil {
		t.Fatalf("row error %+v", row.Error)
	}
	got := states()
	if i := slices.Index(got, api.StateStarting); i < 0 || !slices.Contains(got[i:], api.StateRunning) {
		t.Fatalf("states %v, want starting then running", got)
	}
	st := w.status("default")["redis"]
	if st.Status == "" {
		t.Errorf("redis sends STATUS=; status shows none: %+v", st)
	}
}

// A shell agent with systemd-notify: --status and --ready are shown, and
// when its watchdog pings stop, it is restarted by its policy (code
// watchdog).
func TestSystemdNotifyStatusAndWatchdog(t *testing.T) {
	needTools(t, "systemd-notify")
	w := newWorld(t)
	m := uniqueMarker()
	w.writeConfig(fmt.Sprintf(`agents:
  - id: pinger
    command: [/bin/sh, -c, 'sleep 0.3; systemd-notify --ready --status="warming up"; for i in 1 2 3; do systemd-notify WATCHDOG=1; sleep 0.1; done; systemd-notify --status="stuck"; exec sleep 1000', %s]
    ready: notify
    watchdog: 500ms
    restart: always
`, m))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	begin := time.Now()
	r := w.mustRun("start", "pinger")
	if d := time.Since(begin); d < 300*time.Millisecond || !strings.Contains(r.stdout, "running") {
		t.Fatalf("start returned %q after %v, before the agent said READY=1", r.stdout, d)
	}
	if st := w.status("default")["pinger"]; st.Status != "warming up" && st.Status != "stuck" {
		t.Fatalf("status text %q, want the agent's STATUS=", st.Status)
	}
	var st statusRow
	if !testproc.UntilEvery(20*time.Second, 20*time.Millisecond, func() bool {
		st = w.status("default")["pinger"]
		return st.Restarts >= 1
	}) {
		t.Fatalf("never restarted after its pings stopped: %+v", st)
	}
	if st.Error == nil || st.Error.Code != api.CodeWatchdog {
		// Restarted: the error of the restart is the watchdog's.
		t.Fatalf("restarted with error %+v, want code watchdog", st.Error)
	}
}

// http, tcp, exec and log checks against real programs; --no-wait
// answers at spawn.
func TestOutsideReadinessChecks(t *testing.T) {
	needTools(t, "python3")
	w := newWorld(t)
	m := uniqueMarker()
	web, tcp := freeTCPPort(t), freeTCPPort(t)
	flag := filepath.Join(w.dir, "up")
	w.writeConfig(fmt.Sprintf(`agents:
  - id: web
    command: [/bin/sh, -c, 'sleep 0.3; exec python3 -m http.server --bind 127.0.0.1 %[1]d', %[5]s-web]
    ready: {http: "http://127.0.0.1:%[1]d/"}
  - id: port
    command: [/bin/sh, -c, 'sleep 0.3; exec python3 -m http.server --bind 127.0.0.1 %[2]d', %[5]s-port]
    ready: {tcp: "127.0.0.1:%[2]d"}
  - id: file
    command: [/bin/sh, -c, 'sleep 0.3; touch %[3]s; exec sleep 1000', %[5]s-file]
    ready: {exec: [test, -e, %[3]s]}
  - id: line
    command: [/bin/sh, -c, 'echo starting; sleep 0.3; echo "listening on 8080"; exec sleep 1000', %[5]s-line]
    ready: {log: "^listening on [0-9]+$"}
  - id: slow
    command: [/bin/sh, -c, 'sleep 1000', %[5]s-slow]
    ready: {log: "never printed"}
  - id: %[4]s
    command: [/bin/sh, -c, 'exec sleep 1000', %[5]s-gone]
    ready: {log: "never printed"}
    start_timeout: 500ms
`, web, tcp, flag, "late", m))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	for _, id := range []string{"web", "port", "file", "line"} {
		begin := time.Now()
		r := w.mustRun("start", id)
		if d := time.Since(begin); d < 300*time.Millisecond || !strings.Contains(r.stdout, id+": running") {
			t.Errorf("start %s returned %q after %v, before the agent was ready", id, r.stdout, d)
		}
	}
	r := w.mustRun("start", "--no-wait", "slow")
	if !strings.Contains(r.stdout, "slow: starting") {
		t.Errorf("start --no-wait answered %q, want starting", r.stdout)
	}
	late := w.run(30*time.Second, "start", "late")
	if late.code != 1 || !strings.Contains(late.stderr, "not ready within 500ms") {
		t.Errorf("start of a never-ready agent: exit %d, %q", late.code, late.stderr)
	}
	row := w.waitState("default", "late", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeNotReady || row.PID != 0 {
		t.Errorf("never-ready row %+v", row)
	}
	if live := sessionsOf(m + "-gone"); len(live) != 0 {
		t.Errorf("the never-ready agent's tree lives on: %v", live)
	}
}

// chainAgent is an agent of a dependency test: it notes "start ID" and,
// on SIGTERM, "stop ID" in the order file, and is ready 0.2 s after it
// starts. extra adds keys to its entry.
func chainAgent(id, order, marker, extra string) string {
	return fmt.Sprintf(`  - id: %[1]s
    command: [/bin/sh, -c, 'trap "echo stop %[1]s >> %[2]s; exit 0" TERM; echo start %[1]s >> %[2]s; sleep 0.2; echo ready; sleep 1000 & wait', %[3]s-%[1]s]
    ready: {log: "^ready$"}
%[4]s`, id, order, marker, extra)
}

// orderLines reads the order file of chainAgent's agents.
func orderLines(order string) []string {
	b, _ := os.ReadFile(order)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// A chain of three real agents: top requires mid, mid requires base.
// Starting top starts all three in order; stopping base stops top and
// mid first; a failing mid keeps top from starting.
func TestDependencyChain(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	order := filepath.Join(w.dir, "order")
	agent := func(id, extra string) string { return chainAgent(id, order, m, extra) }
	w.writeConfig("agents:\n" + agent("base", "") + agent("mid", "    requires: [base]\n") + agent("top", "    requires: [mid]\n    after: [base]\n"))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	r := w.mustRun("start", "top")
	if !strings.Contains(r.stdout, "top: running") {
		t.Fatalf("start top answered %q", r.stdout)
	}
	st := w.status("default")
	for _, id := range []string{"base", "mid", "top"} {
		if st[id].State != api.StateRunning {
			t.Fatalf("%s is %s after starting top, want running", id, st[id].State)
		}
	}
	lines := func() []string { return orderLines(order) }
	if got := lines(); !slices.Equal(got, []string{"start base", "start mid", "start top"}) {
		t.Fatalf("start order %q", got)
	}
	w.mustRun("stop", "base")
	got := lines()[3:]
	if !slices.Equal(got, []string{"stop top", "stop mid", "stop base"}) {
		t.Fatalf("stop order %q, want top, mid, then base", got)
	}
	st = w.status("default")
	for _, id := range []string{"mid", "top"} {
		if st[id].State != api.StateStopped || st[id].Error == nil || st[id].Error.Code != api.CodeDependency {
			t.Errorf("%s after base stopped: %+v, want stopped with code dependency", id, st[id])
		}
	}

	// A failing middle agent: top does not start, and says why.
	w.writeConfig("agents:\n" + agent("base", "") +
		fmt.Sprintf("  - id: mid\n    command: [/bin/sh, -c, 'sleep 0.1; exit 3', %s-mid]\n    ready: {log: \"^ready$\"}\n    requires: [base]\n    restart: never\n", m) +
		agent("top", "    requires: [mid]\n"))
	w.mustRun("reload")
	res := w.run(30*time.Second, "start", "top")
	if res.code != 1 || !strings.Contains(res.stderr, `required agent "mid" is failed`) {
		t.Fatalf("start top with a failing mid: exit %d, %q", res.code, res.stderr)
	}
	row := w.waitState("default", "top", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeDependency {
		t.Fatalf("top: %+v, want failed with code dependency", row)
	}
	if live := sessionsOf(m + "-top"); len(live) != 0 {
		t.Fatalf("top runs although mid failed: %v", live)
	}
}

// After a crash of the service, the relaunched one brings the chain back
// in dependency order.
func TestDependencyOrderAfterCrash(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	order := filepath.Join(w.dir, "order")
	agent := func(id, extra string) string { return chainAgent(id, order, m, extra) }
	// In the file, the dependents come first: the order is the graph's.
	w.writeConfig("agents:\n" + agent("top", "    requires: [mid]\n") + agent("mid", "    after: [base]\n    requires: [base]\n") + agent("base", ""))
	s := w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	w.mustRun("start", "top")
	s.kill()
	waitSessions(t, m, 0)
	if err := os.Remove(order); err != nil {
		t.Fatal(err)
	}
	w.startService("default")
	w.waitState("default", "top", api.StateRunning)
	if got := orderLines(order); !slices.Equal(got, []string{"start base", "start mid", "start top"}) {
		t.Fatalf("after the relaunch the start order is %q", got)
	}
}
