package tray

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func agent(id string, state api.State, since time.Duration, err *api.Error) api.Agent {
	a := api.Agent{ID: id, Identity: id + "@relay", State: state, Enabled: true, Since: t0.Add(-since), Error: err}
	if state == api.StateRunning || state == api.StateStarting || state == api.StateStopping || state == api.StateCleanupFailed {
		a.PID, a.GuardianPID = 4242, 4241
	}
	if state == api.StateStopped {
		a.Enabled = false
	}
	return a
}

func connected(agents ...api.Agent) Input {
	return Input{
		Profile:    "default",
		Conn:       Connected,
		Status:     api.Status{Profile: "default", ServicePID: 99, Agents: agents},
		LastErrors: map[string]Recorded{},
		Login:      Login{Known: true},
		Now:        t0,
	}
}

// find returns the visible item reached by titles, each matched as a
// prefix of one level's titles.
func find(t *testing.T, items []Item, titles ...string) Item {
	t.Helper()
	for i, want := range titles {
		found := false
		for _, it := range items {
			if !it.Separator && !it.Hidden && strings.HasPrefix(it.Title, want) {
				if i == len(titles)-1 {
					return it
				}
				items, found = it.Children, true
				break
			}
		}
		if !found {
			t.Fatalf("no item %q among %v", want, titlesOf(items))
		}
	}
	t.Fatalf("no item %v", titles)
	return Item{}
}

// titlesOf lists the visible items' titles.
func titlesOf(items []Item) []string {
	var out []string
	for _, it := range items {
		switch {
		case it.Hidden:
		case it.Separator:
			out = append(out, "---")
		default:
			out = append(out, it.Title)
		}
	}
	return out
}

// flags is the enabled state of an agent's Start, Stop, Restart.
func flags(t *testing.T, m Menu, sub string) [3]bool {
	t.Helper()
	return [3]bool{find(t, m.Items, sub, TitleStart).Enabled, find(t, m.Items, sub, TitleStop).Enabled, find(t, m.Items, sub, TitleRestart).Enabled}
}

// lastLine is the error line of an agent's submenu: its last child.
func lastLine(t *testing.T, m Menu, sub string) Item {
	t.Helper()
	kids := find(t, m.Items, sub).Children
	return kids[len(kids)-1]
}

func TestBuildRunning(t *testing.T) {
	m := Build(connected(agent("alice", api.StateRunning, 2*time.Hour+5*time.Minute, nil)))
	if m.Icon != assets.Running {
		t.Errorf("icon %v, want running", m.Icon)
	}
	if m.Items[0].Title != "1 running" || m.Items[0].Enabled {
		t.Errorf("first line %+v, want a disabled \"1 running\"", m.Items[0])
	}
	sub := find(t, m.Items, "alice")
	if sub.Title != "alice: running 2h" || !sub.Enabled {
		t.Errorf("submenu %q, want \"alice: running 2h\"", sub.Title)
	}
	if got := flags(t, m, "alice"); got != [3]bool{false, true, true} {
		t.Errorf("start/stop/restart enabled %v, want [false true true]", got)
	}
	if !find(t, m.Items, "alice", TitleOpenLog).Enabled {
		t.Error("Open log disabled")
	}
	if got := find(t, m.Items, "alice", TitleStop).Action; got.Kind != ActStop || len(got.IDs) != 1 || got.IDs[0] != "alice" {
		t.Errorf("Stop's action %+v", got)
	}
	if got := find(t, m.Items, "alice", "identity").Title; got != "identity alice@relay, pid 4242" {
		t.Errorf("info line %q", got)
	}
	if got := lastLine(t, m, "alice").Title; got != "no errors" {
		t.Errorf("error line %q, want \"no errors\"", got)
	}
	if m.Tooltip != "tether: 1 running" {
		t.Errorf("tooltip %q", m.Tooltip)
	}
	q := find(t, m.Items, TitleQuit)
	if q.Action.Kind != ActQuit || !strings.Contains(q.Tooltip, "agents keep running") {
		t.Errorf("Quit tray %+v: its tooltip must say the agents keep running", q)
	}
}

// running -> failed: the error shows in the submenu with its time, the
// icon and the first line turn to failure, and the actions follow.
func TestBuildRunningToFailed(t *testing.T) {
	in := connected(agent("alice", api.StateRunning, time.Minute, nil))
	before := Build(in)

	e := &api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row, each within 1m0s of starting; last: exit status 3", Last: &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 3"}}
	failed := agent("alice", api.StateFailed, 0, e)
	in.Status.Agents = []api.Agent{failed}
	in.LastErrors["alice"] = Recorded{Err: *e, At: failed.Since}
	m := Build(in)
	if m.Icon != assets.Failed || m.Items[0].Title != "1 failed" {
		t.Errorf("icon %v, first line %q; want failed, \"1 failed\"", m.Icon, m.Items[0].Title)
	}
	if sub := find(t, m.Items, "alice"); sub.Title != "alice: failed <1m" {
		t.Errorf("submenu %q", sub.Title)
	}
	line := lastLine(t, m, "alice")
	// The cause first: the last exit's status, then the loop.
	want := "error at " + clock(failed.Since) + ": crash_loop: exit status 3; ended 6 times"
	if !strings.HasPrefix(line.Title, want) || line.Enabled {
		t.Errorf("error line %+v, want a disabled line starting %q", line, want)
	}
	if !strings.Contains(line.Tooltip, e.Message) {
		t.Errorf("the error line's tooltip lacks the whole message: %q", line.Tooltip)
	}
	if got := flags(t, m, "alice"); got != [3]bool{true, true, true} {
		t.Errorf("start/stop/restart enabled %v, want all (an enabled agent parked in failed)", got)
	}
	failed.Enabled = false
	in.Status.Agents = []api.Agent{failed}
	if got := flags(t, Build(in), "alice"); got != [3]bool{true, false, true} {
		t.Errorf("disabled failed agent: start/stop/restart %v, want [true false true]", got)
	}
	if Shape(before.Items) != Shape(m.Items) {
		t.Errorf("a state change changed the menu's shape:\n%s\n%s", Shape(before.Items), Shape(m.Items))
	}

	// It recovers: the service clears the error, the tray keeps it until
	// a newer one replaces it.
	in.Status.Agents = []api.Agent{agent("alice", api.StateRunning, 0, nil)}
	line = lastLine(t, Build(in), "alice")
	if want := "last error at " + clock(failed.Since) + ": crash_loop:"; !strings.HasPrefix(line.Title, want) {
		t.Errorf("after recovery the error line is %q, want it to start %q", line.Title, want)
	}
	newer := &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 1"}
	in.Status.Agents = []api.Agent{agent("alice", api.StateBackoff, 0, newer)}
	in.LastErrors["alice"] = Recorded{Err: *newer, At: t0}
	if line = lastLine(t, Build(in), "alice"); !strings.Contains(line.Title, "exited: exit status 1") || strings.Contains(line.Title, string(api.CodeCrashLoop)) {
		t.Errorf("a newer error did not replace the old one: %q", line.Title)
	}
}

func TestBuildCleanupFailed(t *testing.T) {
	e := &api.Error{Code: api.CodeCleanupFailed, Message: "1 process left after SIGKILL: pid 777"}
	in := connected(agent("alice", api.StateCleanupFailed, 3*time.Second, e), agent("bob", api.StateRunning, time.Hour, nil))
	m := Build(in)
	if m.Icon != assets.Failed || m.Items[0].Title != "1 running, 1 cleanup failed" {
		t.Errorf("icon %v, first line %q", m.Icon, m.Items[0].Title)
	}
	if sub := find(t, m.Items, "alice"); sub.Title != "alice: cleanup failed <1m" || !strings.Contains(sub.Tooltip, "identity stays locked") {
		t.Errorf("submenu %+v", sub)
	}
	if got := flags(t, m, "alice"); got != [3]bool{false, true, false} {
		t.Errorf("start/stop/restart enabled %v, want only stop", got)
	}
	if line := lastLine(t, m, "alice"); line.Title != "error: cleanup_failed: 1 process left after SIGKILL: pid 777" {
		t.Errorf("error line %q", line.Title)
	}
}

func TestBuildBackoff(t *testing.T) {
	e := &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 3"}
	m := Build(connected(agent("bob", api.StateBackoff, 0, e)))
	if m.Icon != assets.Busy || m.Items[0].Title != "1 in backoff" {
		t.Errorf("icon %v, first line %q", m.Icon, m.Items[0].Title)
	}
	if got := flags(t, m, "bob"); got != [3]bool{false, true, true} {
		t.Errorf("start/stop/restart enabled %v, want stop and restart", got)
	}
	if got := find(t, m.Items, TitleStartAll); got.Enabled {
		t.Error("Start all enabled with nothing to start")
	}
	if got := find(t, m.Items, TitleStopAll); !got.Enabled || len(got.Action.IDs) != 1 {
		t.Errorf("Stop all %+v", got)
	}
}

func TestBuildStoppedAndTransitions(t *testing.T) {
	for _, c := range []struct {
		state api.State
		want  [3]bool
		icon  assets.State
	}{
		{api.StateStopped, [3]bool{true, false, false}, assets.Running},
		{api.StateStarting, [3]bool{false, true, false}, assets.Busy},
		{api.StateStopping, [3]bool{false, false, false}, assets.Busy},
	} {
		m := Build(connected(agent("a", c.state, 0, nil)))
		if got := flags(t, m, "a"); got != c.want {
			t.Errorf("%s: start/stop/restart %v, want %v", c.state, got, c.want)
		}
		if m.Icon != c.icon {
			t.Errorf("%s: icon %v, want %v", c.state, m.Icon, c.icon)
		}
	}
}

func TestBuildServiceLost(t *testing.T) {
	in := Input{Profile: "work", Conn: NotRunning, ConnErr: "No tether service is running for profile \"work\".", Login: Login{Known: true}, Now: t0}
	m := Build(in)
	if m.Icon != assets.Unreachable || m.Items[0].Title != "service not running" || m.Items[0].Tooltip != in.ConnErr {
		t.Errorf("icon %v, first line %+v", m.Icon, m.Items[0])
	}
	if m.Tooltip != "tether: service not running" {
		t.Errorf("tooltip %q", m.Tooltip)
	}
	start := find(t, m.Items, TitleStartService)
	if !start.Enabled || start.Action.Kind != ActStartService {
		t.Errorf("Start service %+v", start)
	}
	for _, it := range m.Items {
		if len(it.Children) > 0 && !it.Hidden {
			t.Errorf("agent submenu %q shown while the service is not running", it.Title)
		}
		if !it.Hidden && (it.Title == TitleStartAll || it.Title == TitleStopAll) {
			t.Errorf("%s shown while the service is not running", it.Title)
		}
	}
	find(t, m.Items, TitleOpenConfig)
	find(t, m.Items, TitleStartAtLogin)
	find(t, m.Items, TitleQuit)

	in.StartingService = true
	if s := find(t, Build(in).Items, "Starting service"); s.Enabled {
		t.Errorf("Start service enabled while a start is under way: %+v", s)
	}
	in.StartingService, in.Conn, in.ConnErr = false, Unreachable, "permission denied"
	m = Build(in)
	if m.Items[0].Title != "service unreachable" || find(t, m.Items, TitleStartService).Enabled {
		t.Errorf("unreachable: %v, Start service must be disabled (a service is there)", titlesOf(m.Items))
	}
	if Build(Input{}).Items[0].Title != "connecting to the service…" {
		t.Errorf("connecting: %v", titlesOf(Build(Input{}).Items))
	}
}

// TestShapeStable: the menu keeps its shape (see Build) whatever happens,
// as long as the agents fit its slots.
func TestShapeStable(t *testing.T) {
	var inputs []Input
	for n := range 5 {
		for _, st := range []api.State{api.StateRunning, api.StateFailed, api.StateCleanupFailed, api.StateStopped} {
			var agents []api.Agent
			for i := range n {
				agents = append(agents, agent(string(rune('a'+i)), st, 0, &api.Error{Code: api.CodeSpawn, Message: "x"}))
			}
			in := connected(agents...)
			if n%2 == 0 {
				in.Status.ConfigError = &api.Error{Code: api.CodeConfig, Message: "bad"}
			}
			inputs = append(inputs, in)
		}
	}
	inputs = append(inputs, Input{}, Input{Conn: NotRunning, StartingService: true}, Input{Conn: Unreachable, Login: Login{Known: true, On: true}})
	want := ""
	for i, in := range inputs {
		in.Slots = 4
		got := Shape(Build(in).Items)
		if i == 0 {
			want = got
		} else if got != want {
			t.Fatalf("input %d (%v, %d agents): shape\n%s\nwant\n%s", i, in.Conn, len(in.Status.Agents), got, want)
		}
	}
	in := connected(agent("a", api.StateRunning, 0, nil), agent("b", api.StateRunning, 0, nil), agent("c", api.StateRunning, 0, nil))
	in.Slots = 2
	if m := Build(in); Shape(m.Items) == want || len(titlesOf(m.Items)) != len(titlesOf(Build(connected(in.Status.Agents...)).Items)) {
		t.Errorf("more agents than slots: %v", titlesOf(m.Items))
	}
	if got := growSlots(8, 3); got != 8 {
		t.Errorf("growSlots(8, 3) = %d", got)
	}
	if got := growSlots(8, 9); got != 16 {
		t.Errorf("growSlots(8, 9) = %d", got)
	}
	if got := growSlots(8, 30); got != 34 {
		t.Errorf("growSlots(8, 30) = %d", got)
	}
}

func TestAggregate(t *testing.T) {
	for _, c := range []struct {
		states []api.State
		want   string
	}{
		{nil, "no agents"},
		{[]api.State{api.StateRunning, api.StateRunning, api.StateFailed, api.StateRunning}, "3 running, 1 failed"},
		{[]api.State{api.StateCleanupFailed, api.StateStopped, api.StateBackoff, api.StateStarting, api.StateStopping}, "1 starting, 1 stopping, 1 in backoff, 1 stopped, 1 cleanup failed"},
		{[]api.State{api.StateRunning, "hibernating"}, "1 running, 1 hibernating"},
	} {
		var agents []api.Agent
		for i, s := range c.states {
			agents = append(agents, api.Agent{ID: string(rune('a' + i)), State: s})
		}
		if got := Aggregate(agents); got != c.want {
			t.Errorf("Aggregate(%v) = %q, want %q", c.states, got, c.want)
		}
	}
}

func TestIconFor(t *testing.T) {
	st := func(states ...api.State) api.Status {
		var s api.Status
		for _, x := range states {
			s.Agents = append(s.Agents, api.Agent{State: x})
		}
		return s
	}
	cfgErr := st(api.StateRunning)
	cfgErr.ConfigError = &api.Error{Code: api.CodeConfig, Message: "bad"}
	for _, c := range []struct {
		name string
		st   api.Status
		want assets.State
	}{
		{"all running", st(api.StateRunning, api.StateRunning), assets.Running},
		{"one stopped", st(api.StateRunning, api.StateStopped), assets.Running},
		{"starting", st(api.StateStarting), assets.Busy},
		{"stopping", st(api.StateRunning, api.StateStopping), assets.Busy},
		{"no agents", st(), assets.Running},
		{"failed", st(api.StateRunning, api.StateFailed), assets.Failed},
		{"cleanup failed", st(api.StateStopped, api.StateCleanupFailed), assets.Failed},
		{"backoff", st(api.StateRunning, api.StateBackoff), assets.Busy},
		{"failed beats backoff", st(api.StateBackoff, api.StateFailed), assets.Failed},
		{"a state this tray does not know", st(api.StateRunning, "hibernating"), assets.Busy},
		{"config error", cfgErr, assets.Failed},
	} {
		if got := IconFor(c.st); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBuildStatusErrorsAndEmpty(t *testing.T) {
	in := connected()
	in.Status.ConfigError = &api.Error{Code: api.CodeConfig, Message: "agents.yaml:3: unknown key \"comand\""}
	m := Build(in)
	if m.Items[1].Title != "config not applied: agents.yaml:3: unknown key \"comand\"" || !strings.Contains(m.Items[1].Tooltip, "tether reload") {
		t.Errorf("config error line %+v", m.Items[1])
	}
	if find(t, m.Items, "no agents configured").Enabled {
		t.Error("the no-agents line is enabled")
	}
	if find(t, m.Items, TitleStartAll).Enabled || find(t, m.Items, TitleStopAll).Enabled {
		t.Error("Start all or Stop all enabled without agents")
	}
}

func TestBuildAllActions(t *testing.T) {
	m := Build(connected(
		agent("a", api.StateStopped, 0, nil),
		agent("b", api.StateRunning, 0, nil),
		agent("c", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "no such file"}),
	))
	if got := find(t, m.Items, TitleStartAll).Action; got.Kind != ActStart || strings.Join(got.IDs, ",") != "a,c" {
		t.Errorf("Start all %+v, want start a,c", got)
	}
	if got := find(t, m.Items, TitleStopAll).Action; got.Kind != ActStop || strings.Join(got.IDs, ",") != "b,c" {
		t.Errorf("Stop all %+v, want stop b,c", got)
	}
}

func TestBuildLogin(t *testing.T) {
	in := connected()
	in.Login = Login{}
	if it := find(t, Build(in).Items, TitleStartAtLogin); it.Enabled || !it.Checkable || it.Checked {
		t.Errorf("unknown login state: %+v, want disabled and unchecked", it)
	}
	in.Login = Login{Known: true, On: true}
	if it := find(t, Build(in).Items, TitleStartAtLogin); !it.Enabled || !it.Checked || it.Action.Kind != ActToggleLogin {
		t.Errorf("on: %+v", it)
	}
	in.Login.Busy = true
	if it := find(t, Build(in).Items, TitleStartAtLogin); it.Enabled {
		t.Errorf("busy: %+v, want disabled", it)
	}
}

func TestBuildProfileTooltip(t *testing.T) {
	in := connected(agent("a", api.StateRunning, 0, nil))
	in.Profile = "work"
	if got := Build(in).Tooltip; got != "tether (work): 1 running" {
		t.Errorf("tooltip %q", got)
	}
}

func TestErrorLineTruncated(t *testing.T) {
	long := strings.Repeat("x", 500) + "\nsecond line"
	m := Build(connected(agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: long})))
	line := lastLine(t, m, "a")
	if n := len([]rune(line.Title)); n > len("error: ")+maxErrorTitle || strings.Contains(line.Title, "\n") {
		t.Errorf("error line of %d runes: %q", n, line.Title)
	}
	if !strings.Contains(line.Tooltip, long) {
		t.Error("the tooltip lost the message")
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                    "<1m",
		0:                               "<1m",
		59 * time.Second:                "<1m",
		time.Minute:                     "1m",
		59*time.Minute + 59*time.Second: "59m",
		2*time.Hour + 59*time.Minute:    "2h",
		49 * time.Hour:                  "2d",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

// The agent's own status (STATUS=, or what it waits for) is a line of
// its submenu, and there is none without one.
func TestBuildShowsTheAgentsStatus(t *testing.T) {
	a := agent("redis", api.StateRunning, 0, nil)
	a.Status = "Ready to accept connections tcp"
	item := find(t, Build(connected(a)).Items, "redis: running")
	if s := find(t, item.Children, "status: Ready to accept connections tcp"); s.Hidden {
		t.Errorf("status line hidden: %+v", s)
	}
	a.Status = ""
	for _, c := range find(t, Build(connected(a)).Items, "redis: running").Children {
		if strings.HasPrefix(c.Title, "status:") && !c.Hidden {
			t.Errorf("a status line without a status: %+v", c)
		}
	}
}
