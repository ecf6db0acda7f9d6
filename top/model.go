package top

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
)

// Messages from the event stream and from actions.
type (
	helloMsg  api.Status // the whole status: at connection, after a reload
	agentMsg  api.Agent  // one agent's row changed
	downMsg   struct{ err error }
	resultMsg struct {
		verb verb
		id   string
		err  error
	}
	sizeMsg struct{ w, h int }
)

// verb is what a key asks the service to do.
type verb string

// The verbs, as the view's notes name them.
const (
	verbStart   verb = "start"
	verbStop    verb = "stop"
	verbRestart verb = "restart"
	verbReload  verb = "reload"
)

// keyVerbs are the keys that act on the selected agent.
var keyVerbs = map[string]verb{"s": verbStart, "x": verbStop, "r": verbRestart}

// actionTimeout bounds one start, stop or restart: a start waits for the
// agent's readiness.
const actionTimeout = 2 * time.Minute

// model is the view's state. The frame is drawn from it alone.
type model struct {
	ctx     context.Context
	c       *client.Client
	profile string
	color   bool
	scr     *screen

	up     bool
	down   string // why the service is not reachable
	agents map[string]api.Agent
	w, h   int

	sel       string // the selected agent's id
	help      bool
	filtering bool
	filter    string
	confirm   string // the running agent a stop waits a y/n for
	note      string // the last action's outcome
	// usage is what each agent cost when last measured (u, or a
	// refresh); nil until then.
	usage map[string]*api.Usage
	// every is the pace of the refresh of usage (0: off), refreshGen
	// the generation of the refresh at that pace.
	every      time.Duration
	refreshGen int

	// send delivers a message to the running program.
	send func(tea.Msg)
	// The log pane: the agent whose log it follows ("" when closed),
	// its last lines, and the follower's cancel and generation.
	logID     string
	logLines  []string
	logCancel context.CancelFunc
	logGen    int
}

// Init starts the refresh of CPU and memory when the view opens with
// one.
func (m *model) Init() tea.Cmd {
	if m.every == 0 {
		return nil
	}
	return m.pace(m.every)
}

// rows are the agents the filter keeps, in the order shown.
func (m *model) rows() []api.Agent {
	var out []api.Agent
	for _, a := range m.agents {
		if m.filter == "" || strings.Contains(strings.ToLower(a.ID), strings.ToLower(m.filter)) {
			out = append(out, a)
		}
	}
	sortRows(out)
	return out
}

// selected is the index of the selected row, keeping the first row
// selected when none is.
func (m *model) selected(rows []api.Agent) int {
	for i, a := range rows {
		if a.ID == m.sel {
			return i
		}
	}
	if len(rows) > 0 {
		m.sel = rows[0].ID
	}
	return 0
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case helloMsg:
		m.up, m.down = true, ""
		m.agents = map[string]api.Agent{}
		for _, a := range msg.Agents {
			m.agents[a.ID] = a
		}
	case agentMsg:
		if m.up {
			m.agents[msg.ID] = api.Agent(msg)
		}
	case downMsg:
		m.up = false
		m.down = "service not reachable, reconnecting"
		if msg.err != nil && !errors.Is(msg.err, client.ErrNotRunning) && !errors.Is(msg.err, client.ErrStreamClosed) {
			m.down += ": " + msg.err.Error()
		}
	case resultMsg:
		what := strings.TrimSpace(string(msg.verb) + " " + msg.id)
		if msg.err != nil {
			m.note = fmt.Sprintf("%s: %v", what, msg.err)
		} else {
			m.note = what + ": done"
		}
	case logLineMsg:
		m.logLine(msg)
	case logResetMsg:
		if msg.gen == m.logGen {
			m.logLines = nil
		}
	case usageMsg:
		return m, m.measured(msg)
	case refreshMsg:
		return m, m.refresh(msg)
	case sizeMsg:
		m.w, m.h = msg.w, msg.h
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key handles one key press.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste {
		// Keys typed faster than they are read come as one message.
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt}))
		}
		return tea.Sequence(cmds...)
	}
	s := k.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	if m.filtering {
		switch k.Type {
		case tea.KeyEnter:
			m.filtering = false
		case tea.KeyEsc:
			m.filtering, m.filter = false, ""
		case tea.KeyBackspace:
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			m.filter += string(k.Runes)
		}
		return nil
	}
	if m.confirm != "" {
		id := m.confirm
		m.confirm = ""
		if s == "y" || s == "Y" {
			return m.act(verbStop, id)
		}
		m.note = "stop " + id + ": cancelled"
		return nil
	}
	if m.help {
		// Any key leaves the help; q still quits.
		m.help = false
		if s == "q" {
			return tea.Quit
		}
		return nil
	}
	rows := m.rows()
	i := m.selected(rows)
	switch s {
	case "q":
		return tea.Quit
	case "?":
		m.help = true
	case "up", "k":
		if i > 0 {
			m.sel = rows[i-1].ID
		}
	case "down", "j":
		if i+1 < len(rows) {
			m.sel = rows[i+1].ID
		}
	case "/":
		m.filtering = true
	case "u":
		return m.measure(false)
	case "+", "=":
		return m.pace(faster(m.every))
	case "-":
		return m.pace(slower(m.every))
	case "R":
		return m.act(verbReload, "")
	case "l":
		if len(rows) == 0 {
			return m.toggleLog("")
		}
		return m.toggleLog(rows[i].ID)
	case "esc":
		m.filter = ""
	case "s", "x", "r":
		if len(rows) == 0 || !m.up {
			return nil
		}
		a := rows[i]
		v := keyVerbs[s]
		if v == verbStop && a.State == api.StateRunning {
			m.confirm = a.ID
			return nil
		}
		return m.act(v, a.ID)
	}
	return nil
}

// act runs verb on id in the background; its outcome comes back as a
// resultMsg.
func (m *model) act(v verb, id string) tea.Cmd {
	m.note = strings.TrimSpace(string(v)+" "+id) + "…"
	c, ctx := m.c, m.ctx
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		var res api.Results
		var err error
		switch v {
		case verbReload:
			_, err = c.Reload(ctx)
		case verbStart:
			res, err = c.Start(ctx, id)
		case verbStop:
			res, err = c.Stop(ctx, id)
		case verbRestart:
			res, err = c.Restart(ctx, id)
		}
		if err == nil {
			for _, r := range res.Results {
				if r.Error != nil {
					err = r.Error
				}
			}
		}
		return resultMsg{v, id, err}
	}
}

// View draws the frame on the screen when it differs from the last one.
// The program runs without a renderer of its own, so an idle view does
// not wake: this is called only after a message.
func (m *model) View() string {
	m.scr.draw(m.frame())
	return ""
}
