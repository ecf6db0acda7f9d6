package top

import (
	"io"
	"strings"
	"sync"
)

// Escape sequences of the full-screen view.
const (
	enterAlt   = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J" // alternate screen, cursor hidden, cleared
	leaveAlt   = "\x1b[?25h\x1b[?1049l"
	home       = "\x1b[H"
	clearLine  = "\x1b[K"
	clearBelow = "\x1b[J"
)

// screen writes whole frames to the terminal, and only frames that
// differ from the last one: nothing is written, and nothing wakes, while
// nothing changes.
type screen struct {
	mu   sync.Mutex
	out  io.Writer
	last string
}

func (s *screen) draw(lines []string) {
	f := home + strings.Join(lines, clearLine+"\r\n") + clearLine + clearBelow
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == s.last {
		return
	}
	s.last = f
	io.WriteString(s.out, f)
}
