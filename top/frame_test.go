package top

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tether-dev/tether/api"
)

func testModel(color bool) *model {
	m := &model{profile: "default", color: color, scr: &screen{out: &bytes.Buffer{}}, w: 80, h: 24, up: true, agents: map[string]api.Agent{}}
	for _, a := range []api.Agent{
		{ID: "alpha", State: api.StateRunning, PID: 42},
		{ID: "zed", State: api.StateFailed, Error: &api.Error{Code: api.CodeSpawn, Message: string(api.CodeSpawn) + `: starting guardian for "zed": spawn: command "/x" not found` + strings.Repeat(" and more", 20)}},
		{ID: "bob", State: api.StateStopped},
	} {
		m.agents[a.ID] = a
	}
	return m
}

// sgrCode is one SGR escape sequence.
var sgrCode = regexp.MustCompile("\x1b\\[[0-9;]*m")

// visible is line l as it shows, without its SGR codes.
func visible(l string) string { return sgrCode.ReplaceAllString(l, "") }

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestFrameFitsAndOrders: the frame is exactly the terminal's height, no
// line wider than it, and the failed agent comes first with its cause.
func TestFrameFitsAndOrders(t *testing.T) {
	m := testModel(false)
	f := m.frame()
	if len(f) != 24 {
		t.Fatalf("%d lines, want 24", len(f))
	}
	for i, l := range f {
		if n := len([]rune(visible(l))); n > 80 {
			t.Errorf("line %d is %d wide: %q", i, n, l)
		}
		if strings.Contains(l, "\x1b[3") {
			t.Errorf("line %d has a colour without colours: %q", i, l)
		}
	}
	if !strings.Contains(f[2], "zed") || !strings.Contains(f[2], "failed") || !strings.Contains(f[2], `command "/x" not found`) {
		t.Errorf("the first row is not the failed one, cause first: %q", f[2])
	}
	if strings.Contains(f[2], "guardian") {
		t.Errorf("the row keeps the guardian's context: %q", f[2])
	}
	if !strings.Contains(testModel(true).frame()[2], "\x1b[31mfailed") {
		t.Errorf("the failed state is not red: %q", testModel(true).frame()[2])
	}
}

// TestKeys: keys typed in one burst each count; a stop of a running agent
// asks first, and n cancels it; q quits.
func TestKeys(t *testing.T) {
	m := testModel(false)
	m.Update(runes("/al"))
	if !m.filtering || m.filter != "al" {
		t.Fatalf("after /al: filtering %v, filter %q", m.filtering, m.filter)
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	if rows := m.rows(); len(rows) != 1 || rows[0].ID != "alpha" {
		t.Fatalf("filter al kept %v", rows)
	}
	m.Update(runes("x"))
	if m.confirm != "alpha" || !strings.Contains(m.frame()[23], "(y/n)") {
		t.Fatalf("x on a running agent does not ask: confirm %q, %q", m.confirm, m.frame()[23])
	}
	if _, cmd := m.Update(runes("n")); cmd != nil || m.confirm != "" {
		t.Fatalf("n did not cancel the stop")
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEsc})
	m.Update(tea.KeyMsg{Type: tea.KeyDown})
	m.Update(tea.KeyMsg{Type: tea.KeyDown})
	if m.sel != "bob" {
		t.Fatalf("two downs selected %q, want bob", m.sel)
	}
	if _, cmd := m.Update(runes("x")); cmd == nil || m.confirm != "" {
		t.Fatalf("x on a stopped agent asked, or did nothing")
	}
	m.Update(runes("?"))
	if !strings.Contains(strings.Join(m.frame(), "\n"), "show these keys") {
		t.Fatalf("? does not show the keys")
	}
	if _, cmd := m.Update(runes("q")); cmd == nil {
		t.Fatal("q does not quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

// TestIdleWritesNothing: a frame equal to the last one is not written.
func TestIdleWritesNothing(t *testing.T) {
	var out bytes.Buffer
	m := testModel(false)
	m.scr = &screen{out: &out}
	m.View()
	n := out.Len()
	m.View()
	if out.Len() != n {
		t.Fatalf("an unchanged frame was written again")
	}
	m.Update(agentMsg(api.Agent{ID: "bob", State: api.StateStarting}))
	m.View()
	if out.Len() == n {
		t.Fatalf("a changed row was not drawn")
	}
}

// TestDownKeepsRows: while the service is away the view says so, and a
// new hello replaces the rows.
func TestDownKeepsRows(t *testing.T) {
	m := testModel(false)
	m.Update(downMsg{})
	if !strings.Contains(m.frame()[0], "service not reachable") {
		t.Fatalf("head %q", m.frame()[0])
	}
	m.Update(helloMsg(api.Status{Agents: []api.Agent{{ID: "solo", State: api.StateRunning}}}))
	if f := m.frame(); strings.Contains(f[0], "not reachable") || !strings.HasPrefix(visible(f[2]), "solo") || strings.Contains(strings.Join(f, "\n"), "alpha") {
		t.Fatalf("after hello:\n%s", strings.Join(f, "\n"))
	}
}

// TestLogPane: l opens a pane with the selected agent's log lines, their
// control characters made harmless, below the rows; l again closes it.
func TestLogPane(t *testing.T) {
	m := testModel(false)
	m.ctx = context.Background()
	m.send = func(tea.Msg) {}
	m.Update(runes("l"))
	if m.logID != "zed" {
		t.Fatalf("l followed %q, want the selected zed", m.logID)
	}
	m.Update(logResetMsg{m.logGen})
	for i := range 30 {
		m.Update(logLineMsg{m.logGen, fmt.Sprintf("line %d \x1b[31mred", i)})
	}
	m.Update(logLineMsg{m.logGen - 1, "stale"})
	f := strings.Join(m.frame(), "\n")
	if len(m.frame()) != 24 || !strings.Contains(f, "log of zed") || !strings.Contains(f, "line 29") || strings.Contains(f, "stale") || strings.Contains(f, "\x1b[31m") {
		t.Fatalf("the pane:\n%q", f)
	}
	m.Update(runes("l"))
	if m.logID != "" || strings.Contains(strings.Join(m.frame(), "\n"), "log of") {
		t.Fatal("l again did not close the pane")
	}
}

// TestUsageColumns: CPU and MEM show only once measured, and the frame
// still fits.
func TestUsageColumns(t *testing.T) {
	m := testModel(false)
	if strings.Contains(m.frame()[1], "CPU") {
		t.Fatalf("CPU shown before a measure: %q", m.frame()[1])
	}
	m.Update(usageMsg{usage: map[string]*api.Usage{"alpha": {CPUSeconds: 1.5, MemoryBytes: 64 << 20, Procs: 2, Source: api.UsageProcesses}}})
	f := m.frame()
	if !strings.Contains(f[1], "CPU") || !strings.Contains(f[1], "MEM") {
		t.Fatalf("header %q", f[1])
	}
	var alpha string
	for _, l := range f {
		if strings.HasPrefix(visible(l), "alpha") {
			alpha = visible(l)
		}
		if n := len([]rune(visible(l))); n > 80 {
			t.Errorf("a line is %d wide: %q", n, l)
		}
	}
	if !strings.Contains(alpha, "1.50s") || !strings.Contains(alpha, "64.0M") {
		t.Fatalf("alpha's row %q", alpha)
	}
}
