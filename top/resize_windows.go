package top

import (
	"context"
	"os"

	tea "github.com/charmbracelet/bubbletea"
)

// resizes does nothing on Windows: the console has no SIGWINCH, and the
// view keeps the size it started with.
func resizes(ctx context.Context, out *os.File, scr *screen, p *tea.Program) {}
