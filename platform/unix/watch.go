//go:build unix

package unix

import (
	"os"
	"sync"
)

// WriteWatch tells of writes to the files directly inside one directory,
// once for each Arm: the first write after an Arm sends one value on C,
// and nothing more comes until the next Arm. While nothing is written, a
// watch costs no wakeup: no timer runs and no thread polls. Its OS half is
// inotify on Linux (watch_linux.go) and kqueue on macOS (watch_darwin.go).
type WriteWatch struct {
	dir string
	c   chan struct{}

	mu     sync.Mutex
	closed bool
	os     osWatch
}

// C delivers one value for each Arm that a write answered. It is
// buffered: a value not yet taken is never lost, and a second one never
// queues behind it.
func (w *WriteWatch) C() <-chan struct{} { return w.c }

// Arm asks for a value on C at the next write to a file of the
// directory, or at the next change of the directory itself: an entry
// created, removed or renamed, or the directory removed or renamed (after
// which Arm fails until it exists again). Arming an armed watch changes
// nothing. A watch that broke (its OS instance failed) sends a last value
// and fails every Arm after.
func (w *WriteWatch) Arm() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return os.ErrClosed
	}
	return w.os.arm(w)
}

// Close ends the watch; C is never sent to again.
func (w *WriteWatch) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.os.close()
}

// fire sends the watch's value unless one is already waiting.
func (w *WriteWatch) fire() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}
