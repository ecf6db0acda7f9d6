package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
)

// Reconnection backoff while the service is not reachable.
const (
	minRetry = 250 * time.Millisecond
	maxRetry = 2 * time.Second
)

// ErrNotTerminal reports that the view's input or output is not a
// terminal.
var ErrNotTerminal = errors.New("tether top needs a terminal")

// Options are what Run shows and where.
type Options struct {
	Client  *client.Client
	Profile string
	In      *os.File
	Out     *os.File
	// NoColor draws without colours (the NO_COLOR convention).
	NoColor bool
	// Interval is how often CPU and memory are measured while the view
	// is open: 0 only when asked (u), or at least MinInterval.
	Interval time.Duration
}

// Run shows the view until the person quits it (q) or ctx is done. It
// returns nil on a quit.
func Run(ctx context.Context, o Options) error {
	if !term.IsTerminal(o.In.Fd()) || !term.IsTerminal(o.Out.Fd()) {
		return ErrNotTerminal
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	old, err := term.MakeRaw(o.In.Fd())
	if err != nil {
		return fmt.Errorf("tether top: %w", err)
	}
	defer term.Restore(o.In.Fd(), old)
	scr := &screen{out: o.Out}
	io.WriteString(o.Out, enterAlt)
	defer io.WriteString(o.Out, leaveAlt)

	m := &model{ctx: ctx, c: o.Client, profile: o.Profile, color: !o.NoColor, scr: scr, agents: map[string]api.Agent{},
		every: o.Interval}
	m.w, m.h, _ = term.GetSize(o.Out.Fd())
	// Without a renderer of its own the program draws only through View,
	// after each message: Bubble Tea's renderer would wake at its frame
	// rate even while nothing changes.
	p := tea.NewProgram(m, tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithoutRenderer(),
		tea.WithContext(ctx), tea.WithoutSignalHandler())
	m.send = p.Send
	go watch(ctx, o.Client, p)
	go resizes(ctx, o.Out, scr, p)
	_, err = p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// watch follows the service's event stream while the view is open. When
// the stream ends it reconnects: at once after a working connection, then
// with backoff, the view saying that the service is not reachable
// meanwhile.
func watch(ctx context.Context, c *client.Client, p *tea.Program) {
	delay := minRetry
	for {
		up, err := stream(ctx, c, p)
		if ctx.Err() != nil {
			return
		}
		p.Send(downMsg{err})
		if up {
			delay = minRetry
		}
		if !pause(ctx, delay) {
			return
		}
		if !up {
			delay = min(2*delay, maxRetry)
		}
	}
}

// stream reads one event stream to its end. up reports that it got as far
// as the hello.
func stream(ctx context.Context, c *client.Client, p *tea.Program) (up bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seq, err := c.Events(ctx)
	if err != nil {
		return false, err
	}
	for ev, err := range seq {
		if err != nil {
			return up, err
		}
		switch {
		case (ev.Type == api.EventHello || ev.Type == api.EventStatus) && ev.Status != nil:
			p.Send(helloMsg(*ev.Status))
			up = true
		case ev.Type == api.EventAgent && ev.Agent != nil && up:
			p.Send(agentMsg(*ev.Agent))
		}
	}
	return up, client.ErrStreamClosed
}

// pause waits d, and reports false if ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
