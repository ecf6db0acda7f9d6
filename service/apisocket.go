//go:build unix || windows

package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tether-dev/tether/platform"
)

// apiListener is the local API's listener, which stays reachable while
// the service runs: when its socket file is deleted or renamed away (by
// a cleaner of /tmp, or by hand), nobody could ever connect to it again,
// so a new socket is made at the same path and served in its place.
// Removals are seen at once where the system reports changes to the
// socket's directory (inotify, kqueue: platform.WatchWrites), with no
// polling; check does the same on demand, at every reload. A pipe
// (Windows) has no file to lose.
//
// To the HTTP server it is one listener: Accept goes on with the new
// socket when the old one was swapped out under it.
type apiListener struct {
	path string
	logf func(format string, args ...any)

	mu      sync.Mutex
	cur     net.Listener
	ino     os.FileInfo // the socket file cur listens on; nil for a pipe
	watch   platform.WriteWatch
	unwatch chan struct{} // closed when watch is closed, ending its goroutine
	closed  bool
	done    chan struct{} // closed by Close
	// deadline is the one SetDeadline gave, which a new socket gets too.
	deadline time.Time
	// held are connections accepted elsewhere (a stand-in's), which
	// Accept returns before it accepts anything.
	held []net.Conn
}

// listenAPI listens on the profile's socket and keeps it.
func listenAPI(path string, logf func(format string, args ...any)) (*apiListener, error) {
	l, err := platform.Listen(path)
	if err != nil {
		return nil, err
	}
	return keepAPI(path, l, logf), nil
}

// keepAPI keeps l, which listens on path: made here, or handed over by
// the service before an upgrade.
func keepAPI(path string, l net.Listener, logf func(format string, args ...any)) *apiListener {
	a := &apiListener{path: path, logf: logf, cur: l, done: make(chan struct{})}
	a.ino, _ = os.Lstat(path)
	if a.ino != nil && a.ino.Mode()&os.ModeSocket != 0 {
		a.startWatch()
	} else {
		a.ino = nil
	}
	return a
}

// current is the listener that serves now, for a handover.
func (a *apiListener) current() net.Listener {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// currentListener is what l listens with now: an apiListener's current
// socket, or l itself.
func currentListener(l net.Listener) net.Listener {
	if a, ok := l.(*apiListener); ok {
		return a.current()
	}
	return l
}

// hold makes Accept return conns first, in their order: connections a
// stand-in accepted and held, their requests unread.
func (a *apiListener) hold(conns []net.Conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held = append(a.held, conns...)
}

// Accept implements net.Listener.
func (a *apiListener) Accept() (net.Conn, error) {
	for {
		a.mu.Lock()
		if len(a.held) > 0 && !a.closed {
			c := a.held[0]
			a.held = a.held[1:]
			a.mu.Unlock()
			return c, nil
		}
		l := a.cur
		a.mu.Unlock()
		c, err := l.Accept()
		if err == nil {
			return c, nil
		}
		a.mu.Lock()
		swapped := a.cur != l && !a.closed
		a.mu.Unlock()
		if !swapped {
			return nil, err
		}
	}
}

// SetDeadline sets the deadline of Accept, for the API's pause before a
// handover: on the socket that serves now, and on any made after.
func (a *apiListener) SetDeadline(t time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.deadline = t
	return setDeadline(a.cur, t)
}

func setDeadline(l net.Listener, t time.Time) error {
	d, ok := l.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return fmt.Errorf("the %T listener has no deadline", l)
	}
	return d.SetDeadline(t)
}

// Addr implements net.Listener.
func (a *apiListener) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur.Addr()
}

// Close implements net.Listener: it closes the socket, which removes
// its file, and ends the watch.
func (a *apiListener) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	close(a.done)
	for _, c := range a.held {
		c.Close()
	}
	a.held = nil
	a.stopWatchLocked()
	return a.cur.Close()
}

// check makes a new socket when the file the listener serves is no
// longer at its path.
func (a *apiListener) check() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.ino == nil {
		return
	}
	if fi, err := os.Lstat(a.path); err == nil && os.SameFile(fi, a.ino) {
		return
	}
	l, err := platform.Listen(a.path)
	if err != nil {
		a.logf("local API: the socket %s is gone and could not be made again: %v (send SIGHUP to try again)", a.path, err)
		return
	}
	fi, err := os.Lstat(a.path)
	if err != nil {
		l.Close()
		a.logf("local API: the new socket %s: %v", a.path, err)
		return
	}
	if !a.deadline.IsZero() {
		_ = setDeadline(l, a.deadline)
	}
	old := a.cur
	a.cur, a.ino = l, fi
	// The old socket's file is gone, or is now the new one's: closing
	// the old listener must not unlink the new file.
	if ul, ok := old.(interface{ SetUnlinkOnClose(bool) }); ok {
		ul.SetUnlinkOnClose(false)
	}
	old.Close()
	a.logf("local API: the socket %s was removed; listening on it again", a.path)
	// The directory may be a new one too: watch whichever is there.
	a.stopWatchLocked()
	a.startWatchLocked()
}

// stopWatchLocked ends the current watch, if any, and its goroutine.
func (a *apiListener) stopWatchLocked() {
	if a.watch == nil {
		return
	}
	a.watch.Close()
	close(a.unwatch)
	a.watch, a.unwatch = nil, nil
}

func (a *apiListener) startWatch() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.startWatchLocked()
}

// startWatchLocked watches the socket's directory, and checks the
// socket whenever something in it, or the directory, changes; each new
// socket gets a new watch. The watch answers once per Arm, so it is armed
// again before each check: a removal after the check wakes it again. An
// Arm that fails (the directory itself is gone) ends the watch; the next
// reload's check makes the socket, and its watch, again.
func (a *apiListener) startWatchLocked() {
	dir := filepath.Dir(a.path)
	w, err := platform.WatchWrites(dir)
	if err == nil {
		err = w.Arm()
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			a.logf("local API: not watching %s (a removed socket is made again at the next reload): %v", dir, err)
		}
		return
	}
	stop := make(chan struct{})
	a.watch, a.unwatch = w, stop
	go func() {
		for {
			select {
			case <-w.C():
				err := w.Arm()
				a.check()
				if err != nil {
					return // the directory is gone, and check made no new one
				}
			case <-stop:
				return // replaced, or the service is closing
			}
		}
	}()
}

// String names the listener in messages.
func (a *apiListener) String() string { return fmt.Sprintf("local API on %s", a.path) }
