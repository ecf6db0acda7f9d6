package top

import (
	"context"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/human"
)

// usageMsg is what each agent's tree costs, measured once: on request
// (u), or by the refresh of generation gen (+ and -, or --interval).
type usageMsg struct {
	usage map[string]*api.Usage
	err   error
	auto  bool
	gen   int
}

// refreshMsg is the refresh of generation gen coming due.
type refreshMsg struct{ gen int }

// usageColumns show what each tree costs once measured.
var usageColumns = []column{{"CPU", 7}, {"MEM", 7}}

// Paces are the intervals + and - move between, fastest first. Slower
// than the slowest is off; the view starts off unless --interval says
// otherwise (D207).
var paces = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}

// MinInterval is the fastest refresh of CPU and memory.
const MinInterval = time.Second

// faster is the next pace after every (0: off), or the fastest.
func faster(every time.Duration) time.Duration {
	if every == 0 {
		return paces[len(paces)-1]
	}
	for i := len(paces) - 1; i >= 0; i-- {
		if paces[i] < every {
			return paces[i]
		}
	}
	return paces[0]
}

// slower is the next pace before every, or 0 (off) after the slowest.
func slower(every time.Duration) time.Duration {
	for _, p := range paces {
		if p > every {
			return p
		}
	}
	return 0
}

// measure asks the service what each agent costs, once: at u, and at
// each refresh the person set (auto); never otherwise.
func (m *model) measure(auto bool) tea.Cmd {
	if !auto {
		m.note = "measuring…"
	}
	c, ctx, gen := m.c, m.ctx, m.refreshGen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, err := c.StatusWithUsage(ctx)
		u := map[string]*api.Usage{}
		for _, a := range st.Agents {
			u[a.ID] = a.Usage
		}
		return usageMsg{u, err, auto, gen}
	}
}

// pace sets the refresh to every (0: off) and measures now when on.
func (m *model) pace(every time.Duration) tea.Cmd {
	m.every = every
	m.refreshGen++ // the refresh of the pace before ends
	if every == 0 {
		m.note = "CPU and memory: no refresh"
		return nil
	}
	m.note = "CPU and memory: every " + human.Duration(every)
	return m.measure(true)
}

// measured takes a measurement; a refresh that is still the current one
// comes due again after its interval. Its outcome is shown in the
// columns alone, so that a refresh that finds the same costs draws
// nothing.
func (m *model) measured(msg usageMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		m.note = "measuring: " + msg.err.Error()
	case msg.auto:
		m.usage = msg.usage
	default:
		m.usage, m.note = msg.usage, "measured at "+time.Now().Format("15:04:05")
	}
	if !msg.auto || msg.gen != m.refreshGen || m.every == 0 {
		return nil
	}
	gen := m.refreshGen
	return tea.Tick(m.every, func(time.Time) tea.Msg { return refreshMsg{gen} })
}

// refresh measures again when r is the current refresh.
func (m *model) refresh(r refreshMsg) tea.Cmd {
	if r.gen != m.refreshGen || m.every == 0 {
		return nil
	}
	return m.measure(true)
}

// paceText is what the head says of the refresh, "" when off.
func (m *model) paceText() string {
	if m.every == 0 {
		return ""
	}
	return fmt.Sprintf("CPU/MEM every %s", human.Duration(m.every))
}

// columns are the header of the rows: CPU and MEM once measured.
func (m *model) columns() []column {
	if m.usage == nil {
		return columns
	}
	n := len(columns) - 1
	return slices.Concat(columns[:n], usageColumns, columns[n:])
}

// cells are the texts of a's row, in the order of m.columns.
func (m *model) cells(a api.Agent) []string {
	cs := cells(a)
	if m.usage == nil {
		return cs
	}
	cpu, mem := "-", "-"
	if u := m.usage[a.ID]; u != nil && u.Source != "" {
		cpu, mem = u.CPUText(), u.MemoryText()
	}
	n := len(cs) - 1
	return slices.Concat(cs[:n], []string{cpu, mem}, cs[n:])
}
