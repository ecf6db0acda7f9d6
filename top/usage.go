package top

import (
	"context"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tether-dev/tether/api"
)

// usageMsg is what each agent's tree costs, measured once on request.
type usageMsg struct {
	usage map[string]*api.Usage
	err   error
}

// usageColumns show what each tree costs once measured.
var usageColumns = []column{{"CPU", 7}, {"MEM", 7}}

// measure asks the service what each agent costs, once: the view
// measures only when the person asks (u), never in the background.
func (m *model) measure() tea.Cmd {
	m.note = "measuring…"
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, err := c.StatusWithUsage(ctx)
		u := map[string]*api.Usage{}
		for _, a := range st.Agents {
			u[a.ID] = a.Usage
		}
		return usageMsg{u, err}
	}
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
