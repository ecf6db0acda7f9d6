package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tether-dev/tether/api"
)

// TestStatusHelpCoversTheAPI: the help of status names every state and
// every code a row can carry, in the API's order, and nothing else.
func TestStatusHelpCoversTheAPI(t *testing.T) {
	var states []api.State
	for _, s := range stateHelp {
		states = append(states, s.state)
	}
	if !slices.Equal(states, api.States()) {
		t.Errorf("status help states %v, want %v", states, api.States())
	}
	var codes []api.Code
	for _, c := range codeHelp {
		codes = append(codes, c.code)
	}
	if !slices.Equal(codes, api.AgentCodes()) {
		t.Errorf("status help codes %v, want %v", codes, api.AgentCodes())
	}
	help := statusHelp()
	for _, s := range api.States() {
		if !strings.Contains(help, "\n  "+string(s)+" ") {
			t.Errorf("status help has no line for state %s:\n%s", s, help)
		}
	}
	for _, c := range api.AgentCodes() {
		if !strings.Contains(help, "\n  "+string(c)+" ") {
			t.Errorf("status help has no line for code %s:\n%s", c, help)
		}
	}
}

// TestStatusTable: the table shows what each agent costs ("-" for one
// that does not run), and cuts the error only when asked to.
func TestStatusTable(t *testing.T) {
	long := strings.Repeat("word ", 40) + "END"
	now := time.Now()
	st := api.Status{Agents: []api.Agent{
		{ID: "busy", Identity: "busy@relay", State: api.StateRunning, PID: 42,
			Usage: &api.Usage{CPUSeconds: 125.5, MemoryBytes: 64 << 20, Procs: 2, Source: api.UsageProcesses}},
		{ID: "down", Identity: "down@relay", State: api.StateFailed, Usage: &api.Usage{},
			Error: &api.Error{Code: api.CodeExited, Message: long}},
	}}
	var whole, cut strings.Builder
	writeStatusTable(&whole, st, 0, now)
	writeStatusTable(&cut, st, 120, now)
	lines := strings.Split(whole.String(), "\n")
	if want := "ID IDENTITY STATE PID CONTAINMENT CPU MEM SINCE RESTARTS ERROR"; strings.Join(strings.Fields(lines[0]), " ") != want {
		t.Errorf("header %q, want %q", lines[0], want)
	}
	if f := strings.Fields(lines[1]); len(f) < 7 || f[5] != "2m05s" || f[6] != "64.0M" {
		t.Errorf("row of a running agent: %q, want CPU 2m05s and MEM 64.0M", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) < 7 || f[3] != "-" || f[5] != "-" || f[6] != "-" {
		t.Errorf("row of an agent that does not run: %q, want - for PID, CPU and MEM", lines[2])
	}
	if !strings.Contains(whole.String(), "END") {
		t.Errorf("the whole table cut the error:\n%s", whole.String())
	}
	if strings.Contains(cut.String(), "END") || !strings.Contains(cut.String(), "…") {
		t.Errorf("the cut table did not cut the error:\n%s", cut.String())
	}
}

// TestStatusErrorFitsTheTerminal: on a terminal of any width, a row
// keeps to its line, the columns before the error whole; the error says
// its cause first, without the context that repeats the row, and when it
// came; a stopped or failed row shows no pid.
func TestStatusErrorFitsTheTerminal(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 30, 0, 0, time.Local)
	at := time.Date(2026, 12, 5, 10, 2, 3, 0, time.Local)
	st := api.Status{Agents: []api.Agent{
		{ID: "relay-bot-1", Identity: "relay-bot-1@relay.example.org", State: api.StateFailed, PID: 4242, Since: at, Restarts: 3,
			Error: &api.Error{Code: api.CodeSpawn, Time: at,
				Message: `starting guardian for "relay-bot-1@relay.example.org": spawn: command "/opt/bots/relay-bot" not found in PATH "/usr/local/bin:/usr/bin:/bin"`}},
		{ID: "ok", Identity: "ok", State: api.StateStopped, PID: 4343},
		{ID: "gone", Identity: "gone", State: api.StateCleanupFailed, PID: 4444,
			Error: &api.Error{Code: api.CodeCleanupFailed, Message: "cleanup failed (tree_alive): 1 process(es) still alive after SIGKILL: 777 (state D)", Left: []api.Process{{PID: 777, State: "D"}}}},
	}}
	cause := `command "/opt/bots/relay-bot" not found in PATH "/usr/local/bin:/usr/bin:/bin" (spawn, 10:02:03)`
	for _, width := range []int{60, 80, 132, 160, 200} {
		var b strings.Builder
		writeStatusTable(&b, st, width, now)
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		col := strings.Index(lines[0], "ERROR")
		for _, l := range lines {
			// The columns before the error are whole; the error
			// takes what they leave, at least minErrorWidth.
			if n := utf8.RuneCountInString(l); n > max(width, col+minErrorWidth) {
				t.Errorf("width %d: a line of %d runes:\n%s", width, n, l)
			}
		}
		row := lines[1]
		if !strings.HasPrefix(row, "relay-bot-1  relay-bot-1@relay.example.org  failed") {
			t.Errorf("width %d: a column before the error was cut: %q", width, row)
		}
		msg := strings.TrimSuffix(row[col:], "…")
		if !strings.HasPrefix(cause, msg) || len(msg) < minErrorWidth-1 {
			t.Errorf("width %d: the error is not its cause first: %q", width, row[col:])
		}
		if strings.Contains(row, "guardian") {
			t.Errorf("width %d: boilerplate: %q", width, row)
		}
		for i, l := range lines[1:] {
			if f := strings.Fields(l); f[3] != "-" {
				t.Errorf("width %d: row %d shows pid %s in state %s", width, i, f[3], f[2])
			}
		}
	}
	var b strings.Builder
	writeStatusTable(&b, st, 240, now)
	if !strings.Contains(b.String(), cause) {
		t.Errorf("a wide terminal cut the error, or it lacks its code and time:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "pid 777 stuck in the kernel (state D) after SIGKILL (cleanup_failed)") {
		t.Errorf("the cleanup failure does not name what is left:\n%s", b.String())
	}
}

// TestStatusShowsWhatAStartingAgentWaitsFor: the row of a starting agent
// says what it waits for and for how long so far.
func TestStatusShowsWhatAStartingAgentWaitsFor(t *testing.T) {
	now := time.Now()
	st := api.Status{Agents: []api.Agent{{ID: "slowpoke", Identity: "slowpoke", State: api.StateStarting, PID: 9,
		Waiting: &api.Waiting{For: api.WaitLog, What: "listening on", Since: now.Add(-12 * time.Second), Deadline: now.Add(48 * time.Second)}}}}
	var b strings.Builder
	writeStatusTable(&b, st, 0, now)
	if !strings.Contains(b.String(), "waiting for its log line 'listening on' (12 s of 60 s)") {
		t.Errorf("status of a starting agent:\n%s", b.String())
	}
}

// TestStatusServiceLine: the human status ends with the service's
// version, the commit and its date as `tether version` of its binary
// says them, and its pid; nothing when no service answered.
func TestStatusServiceLine(t *testing.T) {
	const hash = "b32545f3b229e60996e928c9c6d4c46be0fbcaff"
	for _, c := range []struct {
		name string
		svc  *api.Service
		want string
	}{
		{"stamped", &api.Service{Version: "1.2.3", Commit: hash, Date: "2026-12-01"},
			"service: tether 1.2.3, commit " + hash + " of 2026-12-01, pid 4242\n"},
		{"from a changed tree", &api.Service{Version: "devel", Commit: hash, Date: "2026-12-01", Modified: true},
			"service: tether devel, commit " + hash + " of 2026-12-01, with changes not committed, pid 4242\n"},
		{"commit unknown", &api.Service{Version: "devel"}, "service: tether devel, commit unknown, pid 4242\n"},
		{"none", nil, ""},
	} {
		var b strings.Builder
		writeServiceLine(&b, api.Status{ServicePID: 4242, Service: c.svc})
		if b.String() != c.want {
			t.Errorf("%s: %q, want %q", c.name, b.String(), c.want)
		}
	}
}
