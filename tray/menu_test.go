package tray

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
)

// agentTitles lists the visible agents' submenu titles, in menu order.
func agentTitles(m menu) []string {
	var out []string
	for _, it := range m.Items {
		if len(it.Children) > 0 && !it.Hidden {
			out = append(out, it.Title)
		}
	}
	return out
}

// Failed agents come first, the rest after, each in config order; the
// bulk actions keep the config's order.
func TestBuildFailedFirst(t *testing.T) {
	spawn := &api.Error{Code: api.CodeSpawn, Message: "no such file"}
	cleanup := &api.Error{Code: api.CodeCleanupFailed, Message: "m"}
	m := build(connectedWith(
		agent("a", api.StateRunning, time.Hour, nil),
		agent("b", api.StateFailed, 0, spawn),
		agent("c", api.StateStopped, 0, nil),
		agent("d", api.StateCleanupFailed, 0, cleanup),
		agent("e", api.StateBackoff, 0, nil),
	))
	var ids []string
	for _, title := range agentTitles(m) {
		id, _, _ := strings.Cut(title, ":")
		ids = append(ids, id)
	}
	if got := strings.Join(ids, ","); got != "b,d,a,c,e" {
		t.Errorf("menu order %s, want b,d,a,c,e (failed first)", got)
	}
	if got := find(t, m.Items, titleStartAll).Action.IDs; strings.Join(got, ",") != "b,c" {
		t.Errorf("Start all %v, want b,c", got)
	}
}

func TestBuildPluralsAndSurvivors(t *testing.T) {
	one := agent("a", api.StateRunning, time.Hour, nil)
	one.Restarts = 1
	two := agent("b", api.StateRunning, time.Hour, nil)
	two.Restarts = 2
	stuck := agent("c", api.StateCleanupFailed, 0, &api.Error{Code: api.CodeCleanupFailed,
		Message: "cleanup failed (tree_alive): 2 process(es) still alive after SIGKILL: 777 (state D), 778 (state D)", Left: []api.Process{{PID: 777, State: "D"}, {PID: 778, State: "D"}}})
	unknown := agent("d", api.StateCleanupFailed, 0, &api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (internal): reading /proc: EIO"})
	m := build(connectedWith(one, two, stuck, unknown))
	for sub, want := range map[string]string{
		"a": "identity a@relay, pid 4242, 1 restart",
		"b": "identity b@relay, pid 4242, 2 restarts",
		// The survivors, not the agent's own pid 4242, long gone.
		"c": "identity c@relay, still alive: pids 777, 778",
		"d": "identity d@relay",
	} {
		if got := find(t, m.Items, sub, "identity").Title; got != want {
			t.Errorf("%s: info line %q, want %q", sub, got, want)
		}
	}
	if got := lastLine(t, m, "c").Title; got != "error: cleanup_failed: pids 777, 778 stuck in the kernel (state D) after SIGKILL" {
		t.Errorf("c: error line %q", got)
	}
}

// Copy error copies the whole error, with whom and when; Reload config
// reloads.
func TestBuildCopyAndReload(t *testing.T) {
	long := strings.Repeat("x", 300) + " exit status 9"
	in := connectedWith(agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeExited, Message: "the agent exited: " + long}), agent("b", api.StateRunning, 0, nil))
	m := build(in)
	cp := find(t, m.Items, "a", titleCopyError)
	if !cp.Enabled || cp.Action.Kind != actCopy || !strings.HasPrefix(cp.Action.Text, "a (a@relay): exited: the agent exited: xxx") || !strings.HasSuffix(cp.Action.Text, "exit status 9") {
		t.Errorf("Copy error of a: %+v", cp)
	}
	if cp := find(t, m.Items, "b", titleCopyError); cp.Enabled {
		t.Errorf("Copy error of b, which has none, is enabled: %+v", cp)
	}
	if r := find(t, m.Items, titleReload); !r.Enabled || r.Action.Kind != actReload {
		t.Errorf("Reload config %+v", r)
	}
	in.Conn = notRunning
	if r := find(t, build(in).Items, titleReload); r.Enabled {
		t.Error("Reload config enabled without a service")
	}

	in = connectedWith()
	in.Status.ConfigError = &api.Error{Code: api.CodeConfig, Message: "config: /x/agents.yaml:3: bad"}
	cp = find(t, build(in).Items, titleCopyError)
	if cp.Action.Text != "config not applied: config: /x/agents.yaml:3: bad" {
		t.Errorf("Copy error of the config: %+v", cp)
	}
	if cp := find(t, build(connectedWith()).Items, titleReload); cp.Hidden {
		t.Error("no Reload config")
	}
	for _, it := range build(connectedWith()).Items {
		if it.Title == titleCopyError && !it.Hidden {
			t.Error("a Copy error for the status shown with no error")
		}
	}
}

// Ages are computed from in.Now, which the engine takes at each rebuild
// (and a rebuild follows the menu's opening); where the binding cannot
// rebuild on opening, the titles say since when instead.
func TestBuildAges(t *testing.T) {
	in := connectedWith(agent("a", api.StateRunning, 3*time.Hour+20*time.Minute, nil))
	if got := find(t, build(in).Items, "a").Title; got != "a: running 3h" {
		t.Errorf("title %q", got)
	}
	in.Now = in.Now.Add(24 * time.Hour)
	if got := find(t, build(in).Items, "a").Title; got != "a: running 1d" {
		t.Errorf("a day later: %q", got)
	}
	in.Now = t0
	in.AgeAsClock = true
	want := "a: running since " + t0.Add(-3*time.Hour-20*time.Minute).Local().Format("15:04")
	if since := t0.Add(-3*time.Hour - 20*time.Minute).Local(); since.YearDay() != t0.Local().YearDay() {
		want = "a: running since " + since.Format("Mon 15:04")
	}
	if got := find(t, build(in).Items, "a").Title; got != want {
		t.Errorf("as a clock: %q, want %q", got, want)
	}
	if got := since(t0.Add(-30*24*time.Hour), t0); got != t0.Add(-30*24*time.Hour).Local().Format("2 Jan 15:04") {
		t.Errorf("a month ago: %q", got)
	}
}

// The icon tells the four states apart: the service not reachable, a
// failure, something on its way, all well.
func TestBuildIconStates(t *testing.T) {
	for _, c := range []struct {
		in   input
		want assets.State
	}{
		{input{Conn: notRunning}, assets.Unreachable},
		{input{Conn: unreachable}, assets.Unreachable},
		{input{Conn: connecting}, assets.Unreachable},
		{connectedWith(agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "m"})), assets.Failed},
		{connectedWith(agent("a", api.StateStarting, 0, nil)), assets.Busy},
		{connectedWith(agent("a", api.StateRunning, 0, nil), agent("b", api.StateStopped, 0, nil)), assets.Running},
	} {
		if got := build(c.in).Icon; got != c.want {
			t.Errorf("%v %v: icon %v, want %v", c.in.Conn, c.in.Status.Agents, got, c.want)
		}
	}
}
