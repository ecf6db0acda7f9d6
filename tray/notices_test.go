package tray

import (
	"slices"
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
)

func labels(n notice) []string {
	var out []string
	for _, a := range n.Actions {
		out = append(out, a.Label)
	}
	return out
}

// Crash loops and cleanup failures are critical; failures offer Open log,
// Start again and Open config, on the agent; informational notices have
// the plain mark.
func TestNoticeUrgencyActionsIcons(t *testing.T) {
	for _, c := range []struct {
		row     api.Agent
		urgency urgency
		actions []string
	}{
		{agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeCrashLoop, Message: "m"}), urgencyCritical, []string{labelOpenLog, labelStartAgain, labelOpenConfig}},
		{agent("a", api.StateCleanupFailed, 0, &api.Error{Code: api.CodeCleanupFailed, Message: "m"}), urgencyCritical, []string{labelOpenLog}},
		{agent("a", api.StateStopped, 0, &api.Error{Code: api.CodeCleanupFailed, Message: "m"}), urgencyCritical, []string{labelOpenLog}},
		{agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "m"}), urgencyNormal, []string{labelOpenLog, labelStartAgain, labelOpenConfig}},
		{agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeContention, Message: "m"}), urgencyNormal, []string{labelStartAgain, labelOpenLog}},
	} {
		var d detector
		n, ok := d.agent(c.row)
		if !ok || n.Urgency != c.urgency || !slices.Equal(labels(n), c.actions) || n.Subject != "agent/a" || n.Agent != "a" || n.Icon != assets.Failed {
			t.Errorf("%s %s: %+v, want urgency %v and actions %v", c.row.State, c.row.Error.Code, n, c.urgency, c.actions)
			continue
		}
		for _, a := range n.Actions {
			switch a.Label {
			case labelOpenLog:
				if a.Do.Kind != actOpenLog || !slices.Equal(a.Do.IDs, []string{"a"}) {
					t.Errorf("Open log does %+v", a.Do)
				}
			case labelStartAgain:
				if a.Do.Kind != actStart || !slices.Equal(a.Do.IDs, []string{"a"}) {
					t.Errorf("Start again does %+v", a.Do)
				}
			case labelOpenConfig:
				if a.Do.Kind != actOpenConfig {
					t.Errorf("Open config does %+v", a.Do)
				}
			}
		}
	}
	for _, n := range []notice{backNotice("", api.Status{}), noTrayNotice(), infoNotice("a/action", "t", "b")} {
		if n.Icon != assets.Mark {
			t.Errorf("%q: icon %v, want the plain mark", n.Title, n.Icon)
		}
	}
	if n := lostNotice("", true); n.Subject != backNotice("", api.Status{}).Subject || !slices.Equal(labels(n), []string{labelStartService}) {
		t.Errorf("lost %+v: the back notice must replace it, and it offers Start service", n)
	}
}

// A process stuck in the kernel has had SIGKILL: no kill -9 advice, but
// what it waits on and what can still be done.
func TestNoticeStuckInKernel(t *testing.T) {
	stuck := &api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 1 process(es) still alive after SIGKILL: 777 (state D)", Left: []api.Process{{PID: 777, State: "D"}}}
	var d detector
	n, _ := d.agent(agent("a", api.StateCleanupFailed, 0, stuck))
	for _, want := range []string{"pid 777 stuck in the kernel", "SIGKILL", "/proc/777/wchan", "freezer", "umount -l", "identity locked"} {
		if !strings.Contains(n.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, n.Body)
		}
	}
	if strings.Contains(n.Body, "kill -9") {
		t.Errorf("kill -9 advice for a process in state D:\n%s", n.Body)
	}
	alive := &api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state S)", Left: []api.Process{{PID: 777, State: "D"}, {PID: 778, State: "S"}}}
	d = detector{}
	n, _ = d.agent(agent("a", api.StateCleanupFailed, 0, alive))
	if !strings.Contains(n.Body, "kill -9") || !strings.Contains(n.Body, "777 (state D), 778 (state S)") {
		t.Errorf("a survivor that can still be killed: %s", n.Body)
	}
}

func TestBackAndConfigNotices(t *testing.T) {
	n := backNotice("work", api.Status{ServicePID: 42, Agents: []api.Agent{{State: api.StateRunning}}})
	if n.Title != "tether: service is back" || !strings.Contains(n.Body, `profile "work"`) || !strings.Contains(n.Body, "pid 42") || !strings.Contains(n.Body, "1 running") || n.Urgency != urgencyLow {
		t.Errorf("back %+v", n)
	}
	c := configNotice(api.Error{Code: api.CodeConfig, Message: "config: /x/agents.yaml:3: agents[0]: unknown key \"comand\""})
	if !strings.HasPrefix(c.Body, "agents.yaml:3: agents[0]: unknown key \"comand\"\n") || strings.Contains(c.Body, "config: config") || !slices.Equal(labels(c), []string{labelOpenConfig}) {
		t.Errorf("config %+v", c)
	}
}

// The sleep gate holds agent and service notices while the machine
// suspends and settles, never the results of the user's clicks nor the
// taking down of a bubble.
func TestSleepGate(t *testing.T) {
	var g sleepGate
	if g.holding() {
		t.Fatal("holding before any suspend")
	}
	g.resume() // a resume without a suspend changes nothing
	if g.holding() {
		t.Fatal("holding after a lone resume")
	}
	g.sleep()
	lost := lostNotice("", true)
	crash := failedNotice("a")
	click := problemNotice("a/action", "could not start a", "b")
	for _, n := range []notice{lost, crash, crash} {
		if !gated(n) {
			t.Errorf("%q not gated", n.Title)
		}
		g.hold(n)
	}
	if gated(click) {
		t.Error("the answer to a click is gated")
	}
	if gated(withdrawal("a")) {
		t.Error("the taking down of a bubble is gated")
	}
	g.resume()
	if !g.holding() {
		t.Fatal("not settling after the resume")
	}
	got := g.release()
	if len(got) != 2 || got[0].Key != lost.Key || got[1].Key != crash.Key || g.holding() {
		t.Errorf("released %+v, holding %v", got, g.holding())
	}
	g.sleep()
	g.hold(crash)
	if got := g.release(); got != nil {
		t.Errorf("released while asleep: %+v", got)
	}
}
