package unix

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// changes are what answers an Arm: a write to a file of the directory
// or the close of a file written, a change of its entries, the loss of
// the directory, or events lost to a full queue. IN_IGNORED alone (the
// removal of a watch that already fired) does not.
const changes = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_Q_OVERFLOW

// watchMask asks for those; IN_ONESHOT removes the watch at its first
// event, so writes after it cost nothing until the next Arm.
const watchMask = changes&^unix.IN_Q_OVERFLOW | unix.IN_ONESHOT | unix.IN_ONLYDIR

// osWatch is an inotify instance, served by the runtime's poller: its
// reader is a goroutine parked on it, which no timer wakes.
type osWatch struct {
	f   *os.File
	fd  uintptr // f's, noted as slow to close (see HoldSlowToClose)
	err error   // why the instance broke, under WriteWatch.mu
}

// WatchWrites returns a watch of the files directly inside dir, not yet
// armed.
func WatchWrites(dir string) (*WriteWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	w := &WriteWatch{dir: dir, c: make(chan struct{}, 1)}
	w.os.f = os.NewFile(uintptr(fd), "inotify")
	w.os.fd = uintptr(fd)
	noteSlowClose(w.os.fd)
	go w.os.read(w)
	return w, nil
}

func (o *osWatch) arm(w *WriteWatch) error {
	if o.err != nil {
		return o.err
	}
	rc, err := o.f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	if err := rc.Control(func(fd uintptr) {
		_, werr = unix.InotifyAddWatch(int(fd), w.dir, watchMask)
	}); err != nil {
		return err
	}
	if werr != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: w.dir, Err: werr}
	}
	return nil
}

func (o *osWatch) close() error { return closeSlow(o.fd, o.f.Close) }

// read waits for events until the watch is closed. A read error other
// than the close breaks the watch: it fires once more, so its owner
// looks, and its next Arm says why.
func (o *osWatch) read(w *WriteWatch) {
	// Room for sixteen events with the longest name; a read returns
	// whole events only.
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := o.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.mu.Lock()
				o.err = fmt.Errorf("reading the inotify watch of %s: %w", w.dir, err)
				w.mu.Unlock()
				w.fire()
			}
			return
		}
		if anyNews(buf[:n]) {
			w.fire()
		}
	}
}

// anyNews reports whether the events in b include one that answers an
// Arm.
func anyNews(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		if ev.Mask&changes != 0 {
			return true
		}
		b = b[min(len(b), unix.SizeofInotifyEvent+int(ev.Len)):]
	}
	return false
}
