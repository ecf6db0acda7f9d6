package top

import (
	"context"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
)

// logKeep is how many lines of the followed log the view keeps: more
// than a pane can show.
const logKeep = 200

// Messages of the log pane. gen tells the follower that sent it, so
// that a line of a log no longer followed is dropped.
type (
	logLineMsg struct {
		gen  int
		line string
	}
	logResetMsg struct{ gen int } // a new stream replays its tail
)

// toggleLog opens the log pane on the selected agent, or closes it.
func (m *model) toggleLog(id string) tea.Cmd {
	if m.logCancel != nil {
		m.logCancel()
		m.logCancel = nil
	}
	m.logGen++
	m.logLines = nil
	if m.logID == id || id == "" {
		m.logID = ""
		return nil
	}
	m.logID = id
	ctx, cancel := context.WithCancel(m.ctx)
	m.logCancel = cancel
	c, gen, send := m.c, m.logGen, m.send
	return func() tea.Msg {
		go follow(ctx, c, id, gen, send)
		return nil
	}
}

// follow streams agent id's log to the view until ctx is done, starting
// again (with its tail) when the stream ends.
func follow(ctx context.Context, c *client.Client, id string, gen int, send func(tea.Msg)) {
	delay := minRetry
	for ctx.Err() == nil {
		if seq, err := c.FollowLog(ctx, id, logKeep); err == nil {
			send(logResetMsg{gen})
			for ev, err := range seq {
				if err != nil {
					break
				}
				if ev.Type == api.EventLog && ev.ID == id {
					send(logLineMsg{gen, ev.Line})
					delay = minRetry
				}
			}
		}
		if !pause(ctx, delay) {
			return
		}
		delay = min(2*delay, maxRetry)
	}
}

// logLine keeps line of the followed log.
func (m *model) logLine(msg logLineMsg) {
	if msg.gen != m.logGen {
		return
	}
	m.logLines = append(m.logLines, printable(msg.line))
	if len(m.logLines) > logKeep {
		m.logLines = append(m.logLines[:0], m.logLines[len(m.logLines)-logKeep:]...)
	}
}

// printable is line with its control characters (escape sequences of the
// agent's own included) made spaces, so that it cannot move the cursor or
// change colours.
func printable(line string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, line)
}
