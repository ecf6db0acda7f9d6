package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/rowtext"
)

// progressGrace is how long a start may take before its progress shows:
// a quick one prints its answer alone, without a line flashing by.
const progressGrace = 300 * time.Millisecond

// progress shows, on one line of a terminal, updated in place, what the
// agents of a start or a restart wait for, from the service's event
// stream (the rows' Waiting), and for how long so far: "slowpoke:
// waiting for its log line 'listening on' (12 s of 60 s)". The line is
// erased before the answer is printed, so that the terminal keeps only
// the answer.
type progress struct {
	out   io.Writer
	width int
	ids   []string

	mu    sync.Mutex
	rows  map[string]api.Agent
	shown bool
}

// showProgress follows what ids wait for on inv's standard error, when
// it is a terminal (a pipe or a file gets only the answer), until the
// returned function is called, which erases the line.
func (inv *invocation) showProgress(c *client.Client, ids []string) (done func()) {
	if !isTerminal(inv.stderr) {
		return func() {}
	}
	p := &progress{out: inv.stderr, width: terminalWidth(inv.stderr), ids: ids, rows: map[string]api.Agent{}}
	ctx, cancel := context.WithCancel(context.Background())
	events, err := c.Events(ctx)
	if err != nil {
		cancel()
		return func() {}
	}
	rows := make(chan []api.Agent, 16)
	go func() {
		defer close(rows)
		for ev, err := range events {
			if err != nil {
				return
			}
			switch {
			case ev.Status != nil:
				rows <- ev.Status.Agents
			case ev.Agent != nil:
				rows <- []api.Agent{*ev.Agent}
			}
		}
	}()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.run(ctx, rows)
	}()
	return func() {
		cancel()
		<-stopped
		p.erase()
	}
}

// run draws the line after progressGrace, then at each change of a row
// and once a second (the time waited), until ctx ends.
func (p *progress) run(ctx context.Context, rows <-chan []api.Agent) {
	grace := time.NewTimer(progressGrace)
	defer grace.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	due := false
	for {
		select {
		case <-ctx.Done():
			return
		case rs, ok := <-rows:
			if !ok {
				rows = nil
				continue
			}
			p.mu.Lock()
			for _, r := range rs {
				p.rows[r.ID] = r
			}
			p.mu.Unlock()
		case <-grace.C:
			due = true
		case <-tick.C:
		}
		if due {
			p.draw(time.Now())
		}
	}
}

// line is what the agents still on their way wait for, at now; "" when
// none is.
func (p *progress) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var parts []string
	for _, id := range p.ids {
		r, ok := p.rows[id]
		if !ok || r.State != api.StateStarting && r.State != api.StateStopping {
			continue
		}
		text := rowtext.Note(r, now)
		if r.Waiting == nil || text == "" {
			text = fmt.Sprintf("%s (%d s)", r.State, max(int(now.Sub(r.Since)/time.Second), 0))
		}
		parts = append(parts, id+": "+text)
	}
	return strings.Join(parts, "; ")
}

// draw writes the line over the last one: from the start of the line,
// cut to the terminal's width (less one column, so that the terminal
// never wraps it), the rest of the old line cleared.
func (p *progress) draw(now time.Time) {
	l := cut(p.line(now), p.width-1)
	if l == "" && !p.shown {
		return
	}
	fmt.Fprintf(p.out, "\r%s\x1b[K", l)
	p.shown = l != ""
}

// erase clears the line, if one was drawn.
func (p *progress) erase() {
	if p.shown {
		fmt.Fprint(p.out, "\r\x1b[K")
		p.shown = false
	}
}
