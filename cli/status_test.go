package cli

import (
	"slices"
	"strings"
	"testing"

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
	st := api.Status{Agents: []api.Agent{
		{ID: "busy", Identity: "busy@relay", State: api.StateRunning, PID: 42,
			Usage: &api.Usage{CPUSeconds: 125.5, MemoryBytes: 64 << 20, Procs: 2, Source: api.UsageProcesses}},
		{ID: "down", Identity: "down@relay", State: api.StateFailed, Usage: &api.Usage{},
			Error: &api.Error{Code: api.CodeExited, Message: long}},
	}}
	var whole, cut strings.Builder
	writeStatusTable(&whole, st, 0)
	writeStatusTable(&cut, st, 80)
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
