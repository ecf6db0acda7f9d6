//go:build !windows

package top

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
)

// resizes tells the view the terminal's new size at each SIGWINCH.
func resizes(ctx context.Context, out *os.File, scr *screen, p *tea.Program) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
		if w, h, err := term.GetSize(out.Fd()); err == nil {
			scr.redraw()
			p.Send(sizeMsg{w, h})
		}
	}
}

// redraw forgets the last frame, so that the next one is written whole
// (after a resize, when the terminal may have wrapped or cleared it).
func (s *screen) redraw() {
	s.mu.Lock()
	s.last = ""
	s.mu.Unlock()
}
