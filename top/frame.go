package top

import (
	"fmt"
	"strings"

	"github.com/tether-dev/tether/api"
)

// keysHelp is what ? shows.
var keysHelp = []string{
	"Keys",
	"",
	"  up, down   select an agent",
	"  s          start the selected agent",
	"  x          stop it (a running one asks y/n)",
	"  r          restart it",
	"  l          follow its log in a pane; l again closes it",
	"  R          reload the config",
	"  u          measure CPU and memory now (each u again)",
	"  +, -       measure them every 30s, 10s, 5s, 2s, 1s, or not",
	"  /          filter by id: type, enter keeps, esc clears",
	"  ?          show these keys",
	"  q          quit",
	"",
	"Press any key to go back.",
}

// frame is the whole screen as lines, each at most m.w runes wide (SGR
// codes aside), m.h lines.
func (m *model) frame() []string {
	w, h := max(m.w, 20), max(m.h, 3)
	var lines []string
	add := func(s string) { lines = append(lines, fit(s, w)) }

	rows := m.rows()
	head := "tether top: profile " + m.profile
	switch {
	case !m.up && m.down == "":
		head += "  connecting…"
	case !m.up:
		head += "  " + m.down
	default:
		failed := 0
		for _, a := range m.agents {
			if a.State == api.StateFailed {
				failed++
			}
		}
		head += "  " + plural(len(m.agents), "agent")
		if failed > 0 {
			head += fmt.Sprintf(", %d failed", failed)
		}
		if p := m.paceText(); p != "" {
			head += "  " + p
		}
	}
	add(head)

	if m.help {
		for _, l := range keysHelp {
			add(l)
		}
		return m.finish(lines, w, h, "")
	}

	idw := 2
	for _, a := range rows {
		idw = max(idw, len([]rune(a.ID)))
	}
	idw = min(idw, max(w/4, 8))
	columns := m.columns()
	widths := make([]int, len(columns))
	used := 0
	for i, c := range columns {
		widths[i] = c.width
		if i == 0 {
			widths[i] = idw
		}
		if i < len(columns)-1 {
			used += widths[i] + 1
		}
	}
	widths[len(columns)-1] = max(w-used, 0)
	hdr := make([]string, len(columns))
	for i, c := range columns {
		hdr[i] = c.name
	}
	add(m.sgr("1", joinCells(hdr, widths)))

	room := h - len(lines) - 1
	logRoom := 0
	if m.logID != "" {
		logRoom = room / 2
		room -= logRoom
	}
	sel := m.selected(rows)
	first := 0
	if sel >= room {
		first = sel - room + 1
	}
	for i := first; i < len(rows) && i < first+room; i++ {
		cs := m.cells(rows[i])
		line := joinCells(cs, widths)
		if col := stateColor(rows[i].State); col != "" && m.color {
			// Colour the state's word alone: it starts after the id.
			at := widths[0] + 1
			r := []rune(line)
			end := min(at+widths[1], len(r))
			line = string(r[:at]) + m.sgr(col, string(r[at:end])) + string(r[end:])
		}
		if i == sel {
			line = "\x1b[7m" + line + "\x1b[27m"
		}
		lines = append(lines, line)
	}
	if len(rows) == 0 && m.up {
		if m.filter != "" {
			add("no agent matches " + m.filter)
		} else {
			add("no agents in the config")
		}
	}

	if m.logID != "" {
		for len(lines) < h-1-logRoom {
			lines = append(lines, "")
		}
		add(m.sgr("1", "log of "+m.logID+" (l closes)"))
		show := m.logLines
		if k := logRoom - 1; len(show) > k {
			show = show[len(show)-k:]
		}
		for _, l := range show {
			add(l)
		}
	}

	var foot string
	switch {
	case m.filtering:
		foot = "filter: " + m.filter + "_"
	case m.confirm != "":
		foot = "stop " + m.confirm + "? it is running (y/n)"
	case m.note != "":
		foot = m.note
	default:
		foot = "? keys  q quit"
	}
	if m.filter != "" && !m.filtering {
		foot = "filter: " + m.filter + " (esc clears)  " + foot
	}
	return m.finish(lines, w, h, foot)
}

// finish pads lines to h-1 and puts foot on the last line.
func (m *model) finish(lines []string, w, h int, foot string) []string {
	if len(lines) > h-1 {
		lines = lines[:h-1]
	}
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	return append(lines, fit(foot, w))
}

// sgr wraps s in the SGR attribute code, unless colour is off.
func (m *model) sgr(code, s string) string {
	if !m.color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// joinCells pads each cell to its width, one space between.
func joinCells(cs []string, widths []int) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == len(cs)-1 {
			b.WriteString(fit(c, widths[i]))
		} else {
			b.WriteString(pad(c, widths[i]))
		}
	}
	return strings.TrimRight(b.String(), " ")
}
