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

func connectedWith(agents ...api.Agent) input {
	return input{
		Profile:    "default",
		Conn:       connected,
		Status:     api.Status{Profile: "default", ServicePID: 99, Agents: agents},
		LastErrors: map[string]recorded{},
		Login:      login{Known: true},
		Now:        t0,
	}
}

// find returns the visible item reached by titles, each matched as a
// prefix of one level's titles.
func find(t *testing.T, items []item, titles ...string) item {
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
	return item{}
}

// titlesOf lists the visible items' titles.
func titlesOf(items []item) []string {
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
func flags(t *testing.T, m menu, sub string) [3]bool {
	t.Helper()
	return [3]bool{find(t, m.Items, sub, titleStart).Enabled, find(t, m.Items, sub, titleStop).Enabled, find(t, m.Items, sub, titleRestart).Enabled}
}

// lastLine is the error line of an agent's submenu: its last child.
func lastLine(t *testing.T, m menu, sub string) item {
	t.Helper()
	kids := find(t, m.Items, sub).Children
	return kids[len(kids)-1]
}

func TestBuildRunning(t *testing.T) {
	m := build(connectedWith(agent("alice", api.StateRunning, 2*time.Hour+5*time.Minute, nil)))
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
	if !find(t, m.Items, "alice", titleOpenLog).Enabled {
		t.Error("Open log disabled")
	}
	if got := find(t, m.Items, "alice", titleStop).Action; got.Kind != actStop || len(got.IDs) != 1 || got.IDs[0] != "alice" {
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
	q := find(t, m.Items, titleQuit)
	if q.Action.Kind != actQuit || !strings.Contains(q.Tooltip, "agents keep running") {
		t.Errorf("Quit tray %+v: its tooltip must say the agents keep running", q)
	}
}

// running -> failed: the error shows in the submenu with its time, the
// icon and the first line turn to failure, and the actions follow.
func TestBuildRunningToFailed(t *testing.T) {
	in := connectedWith(agent("alice", api.StateRunning, time.Minute, nil))
	before := build(in)

	e := &api.Error{Code: api.CodeCrashLoop, Message: "ended 6 times in a row, each within 1m of starting; last: exit status 3", Last: &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 3"}}
	failed := agent("alice", api.StateFailed, 0, e)
	in.Status.Agents = []api.Agent{failed}
	in.LastErrors["alice"] = recorded{Err: *e, At: failed.Since}
	m := build(in)
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
	if got := flags(t, build(in), "alice"); got != [3]bool{true, false, true} {
		t.Errorf("disabled failed agent: start/stop/restart %v, want [true false true]", got)
	}
	if shape(before.Items) != shape(m.Items) {
		t.Errorf("a state change changed the menu's shape:\n%s\n%s", shape(before.Items), shape(m.Items))
	}

	// It recovers: the service clears the error, the tray keeps it until
	// a newer one replaces it.
	in.Status.Agents = []api.Agent{agent("alice", api.StateRunning, 0, nil)}
	line = lastLine(t, build(in), "alice")
	if want := "last error at " + clock(failed.Since) + ": crash_loop:"; !strings.HasPrefix(line.Title, want) {
		t.Errorf("after recovery the error line is %q, want it to start %q", line.Title, want)
	}
	newer := &api.Error{Code: api.CodeExited, Message: "the agent exited: exit status 1"}
	in.Status.Agents = []api.Agent{agent("alice", api.StateBackoff, 0, newer)}
	in.LastErrors["alice"] = recorded{Err: *newer, At: t0}
	if line = lastLine(t, build(in), "alice"); !strings.Contains(line.Title, "exited: exit status 1") || strings.Contains(line.Title, string(api.CodeCrashLoop)) {
		t.Errorf("a newer error did not replace the old one: %q", line.Title)
	}
}

func TestBuildCleanupFailed(t *testing.T) {
	e := &api.Error{Code: api.CodeCleanupFailed, Message: "1 process left after SIGKILL: pid 777"}
	in := connectedWith(agent("alice", api.StateCleanupFailed, 3*time.Second, e), agent("bob", api.StateRunning, time.Hour, nil))
	m := build(in)
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
	m := build(connectedWith(agent("bob", api.StateBackoff, 0, e)))
	if m.Icon != assets.Busy || m.Items[0].Title != "1 in backoff" {
		t.Errorf("icon %v, first line %q", m.Icon, m.Items[0].Title)
	}
	if got := flags(t, m, "bob"); got != [3]bool{false, true, true} {
		t.Errorf("start/stop/restart enabled %v, want stop and restart", got)
	}
	if got := find(t, m.Items, titleStartAll); got.Enabled {
		t.Error("Start all enabled with nothing to start")
	}
	if got := find(t, m.Items, titleStopAll); !got.Enabled || len(got.Action.IDs) != 1 {
		t.Errorf("Stop all %+v", got)
	}
}

func TestBuildStoppedAndTransitions(t *testing.T) {
	for _, c := range []struct {
		state api.State
		want  [3]bool
		icon  assets.State
	}{
		{api.StateStopped, [3]bool{true, false, false}, assets.Mark}, // nothing runs
		{api.StateStarting, [3]bool{false, true, false}, assets.Busy},
		{api.StateStopping, [3]bool{false, false, false}, assets.Busy},
	} {
		m := build(connectedWith(agent("a", c.state, 0, nil)))
		if got := flags(t, m, "a"); got != c.want {
			t.Errorf("%s: start/stop/restart %v, want %v", c.state, got, c.want)
		}
		if m.Icon != c.icon {
			t.Errorf("%s: icon %v, want %v", c.state, m.Icon, c.icon)
		}
	}
}

func TestBuildServiceLost(t *testing.T) {
	in := input{Profile: "work", Conn: notRunning, ConnErr: "No tether service is running for profile \"work\".", Login: login{Known: true}, Now: t0}
	m := build(in)
	if m.Icon != assets.Unreachable || m.Items[0].Title != "service not running" || m.Items[0].Tooltip != in.ConnErr {
		t.Errorf("icon %v, first line %+v", m.Icon, m.Items[0])
	}
	if m.Tooltip != "tether: service not running" {
		t.Errorf("tooltip %q", m.Tooltip)
	}
	start := find(t, m.Items, titleStartService)
	if !start.Enabled || start.Action.Kind != actStartService {
		t.Errorf("Start service %+v", start)
	}
	for _, it := range m.Items {
		if len(it.Children) > 0 && !it.Hidden {
			t.Errorf("agent submenu %q shown while the service is not running", it.Title)
		}
		if !it.Hidden && (it.Title == titleStartAll || it.Title == titleStopAll) {
			t.Errorf("%s shown while the service is not running", it.Title)
		}
	}
	find(t, m.Items, titleOpenConfig)
	find(t, m.Items, titleStartAtLogin)
	find(t, m.Items, titleQuit)

	in.StartingService = true
	if s := find(t, build(in).Items, "Starting service"); s.Enabled {
		t.Errorf("Start service enabled while a start is under way: %+v", s)
	}
	in.StartingService, in.Conn, in.ConnErr = false, unreachable, "permission denied"
	m = build(in)
	if m.Items[0].Title != "service unreachable" || find(t, m.Items, titleStartService).Enabled {
		t.Errorf("unreachable: %v, Start service must be disabled (a service is there)", titlesOf(m.Items))
	}
	if build(input{}).Items[0].Title != "connecting to the service…" {
		t.Errorf("connecting: %v", titlesOf(build(input{}).Items))
	}
}

// TestShapeStable: the menu keeps its shape (see build) whatever happens,
// as long as the agents fit its slots.
func TestShapeStable(t *testing.T) {
	var inputs []input
	for n := range 5 {
		for _, st := range []api.State{api.StateRunning, api.StateFailed, api.StateCleanupFailed, api.StateStopped} {
			var agents []api.Agent
			for i := range n {
				agents = append(agents, agent(string(rune('a'+i)), st, 0, &api.Error{Code: api.CodeSpawn, Message: "x"}))
			}
			in := connectedWith(agents...)
			if n%2 == 0 {
				in.Status.ConfigError = &api.Error{Code: api.CodeConfig, Message: "bad"}
			}
			inputs = append(inputs, in)
		}
	}
	inputs = append(inputs, input{}, input{Conn: notRunning, StartingService: true}, input{Conn: unreachable, Login: login{Known: true, On: true}})
	want := ""
	for i, in := range inputs {
		in.Slots = 4
		got := shape(build(in).Items)
		if i == 0 {
			want = got
		} else if got != want {
			t.Fatalf("input %d (%v, %d agents): shape\n%s\nwant\n%s", i, in.Conn, len(in.Status.Agents), got, want)
		}
	}
	in := connectedWith(agent("a", api.StateRunning, 0, nil), agent("b", api.StateRunning, 0, nil), agent("c", api.StateRunning, 0, nil))
	in.Slots = 2
	if m := build(in); shape(m.Items) == want || len(titlesOf(m.Items)) != len(titlesOf(build(connectedWith(in.Status.Agents...)).Items)) {
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
		if got := aggregate(agents); got != c.want {
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
		{"no agents", st(), assets.Mark},
		{"all stopped", st(api.StateStopped, api.StateStopped), assets.Mark},
		{"failed", st(api.StateRunning, api.StateFailed), assets.Failed},
		{"cleanup failed", st(api.StateStopped, api.StateCleanupFailed), assets.Failed},
		{"backoff", st(api.StateRunning, api.StateBackoff), assets.Busy},
		{"failed beats backoff", st(api.StateBackoff, api.StateFailed), assets.Failed},
		{"a state this tray does not know", st(api.StateRunning, "hibernating"), assets.Busy},
		{"config error", cfgErr, assets.Failed},
	} {
		if got := iconFor(c.st); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBuildStatusErrorsAndEmpty(t *testing.T) {
	in := connectedWith()
	in.Status.ConfigError = &api.Error{Code: api.CodeConfig, Message: "agents.yaml:3: unknown key \"comand\""}
	m := build(in)
	if m.Items[1].Title != "config not applied: agents.yaml:3: unknown key \"comand\"" || !strings.Contains(m.Items[1].Tooltip, "tether reload") {
		t.Errorf("config error line %+v", m.Items[1])
	}
	if find(t, m.Items, "no agents configured").Enabled {
		t.Error("the no-agents line is enabled")
	}
	if find(t, m.Items, titleStartAll).Enabled || find(t, m.Items, titleStopAll).Enabled {
		t.Error("Start all or Stop all enabled without agents")
	}
}

func TestBuildAllActions(t *testing.T) {
	m := build(connectedWith(
		agent("a", api.StateStopped, 0, nil),
		agent("b", api.StateRunning, 0, nil),
		agent("c", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "no such file"}),
	))
	if got := find(t, m.Items, titleStartAll).Action; got.Kind != actStart || strings.Join(got.IDs, ",") != "a,c" {
		t.Errorf("Start all %+v, want start a,c", got)
	}
	if got := find(t, m.Items, titleStopAll).Action; got.Kind != actStop || strings.Join(got.IDs, ",") != "b,c" {
		t.Errorf("Stop all %+v, want stop b,c", got)
	}
}

func TestBuildLogin(t *testing.T) {
	in := connectedWith()
	in.Login = login{}
	if it := find(t, build(in).Items, titleStartAtLogin); it.Enabled || !it.Checkable || it.Checked {
		t.Errorf("unknown login state: %+v, want disabled and unchecked", it)
	}
	in.Login = login{Known: true, On: true}
	if it := find(t, build(in).Items, titleStartAtLogin); !it.Enabled || !it.Checked || it.Action.Kind != actToggleLogin {
		t.Errorf("on: %+v", it)
	}
	in.Login.Busy = true
	if it := find(t, build(in).Items, titleStartAtLogin); it.Enabled {
		t.Errorf("busy: %+v, want disabled", it)
	}
}

func TestBuildProfileTooltip(t *testing.T) {
	in := connectedWith(agent("a", api.StateRunning, 0, nil))
	in.Profile = "work"
	if got := build(in).Tooltip; got != "tether (work): 1 running" {
		t.Errorf("tooltip %q", got)
	}
}

func TestErrorLineTruncated(t *testing.T) {
	long := strings.Repeat("x", 500) + "\nsecond line"
	m := build(connectedWith(agent("a", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: long})))
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
		if got := age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}

// The agent's own status (STATUS=, or what it waits for) is a line of
// its submenu, and there is none without one.
func TestBuildShowsTheAgentsStatus(t *testing.T) {
	a := agent("redis", api.StateRunning, 0, nil)
	a.Status = "Ready to accept connections tcp"
	item := find(t, build(connectedWith(a)).Items, "redis: running")
	if s := find(t, item.Children, "status: Ready to accept connections tcp"); s.Hidden {
		t.Errorf("status line hidden: %+v", s)
	}
	a.Status = ""
	for _, c := range find(t, build(connectedWith(a)).Items, "redis: running").Children {
		if strings.HasPrefix(c.Title, "status:") && !c.Hidden {
			t.Errorf("a status line without a status: %+v", c)
		}
	}
}

// A starting agent's submenu says what it waits for, and for how long at
// most; an error says when it happened, also to a tray that did not see
// it happen.
func TestBuildShowsWhatAStartingAgentWaitsFor(t *testing.T) {
	a := agent("slowpoke", api.StateStarting, 0, nil)
	a.Waiting = &api.Waiting{For: api.WaitLog, What: "listening on", Since: t0, Deadline: t0.Add(time.Minute)}
	item := find(t, build(connectedWith(a)).Items, "slowpoke: starting")
	if s := find(t, item.Children, "status: waiting for its log line 'listening on' (up to 60 s)"); s.Hidden {
		t.Errorf("waiting line hidden: %+v", s)
	}
	at := time.Date(2026, 12, 5, 9, 41, 0, 0, time.Local)
	b := agent("broken", api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: `command "/x" not found`, Time: at})
	if got := lastLine(t, build(connectedWith(b)), "broken").Title; got != `error at 09:41: spawn: command "/x" not found` {
		t.Errorf("error line %q, want its time", got)
	}
}
