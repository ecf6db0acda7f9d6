package unix

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// DirWatch reports removals in one directory: an entry deleted or renamed
// away, or the directory itself deleted or renamed. It is driven by
// inotify through the runtime's poller: while nothing is removed, nothing
// wakes.
type DirWatch struct {
	f *os.File
	c chan struct{}
}

// WatchRemovals starts watching dir.
func WatchRemovals(dir string) (*DirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	const mask = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	// Non-blocking: the runtime's poller waits for it, no thread does.
	w := &DirWatch{f: os.NewFile(uintptr(fd), "inotify:"+dir), c: make(chan struct{}, 1)}
	go w.read()
	return w, nil
}

func (w *DirWatch) read() {
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if err != nil && !errors.Is(err, unix.EINTR) {
			close(w.c)
			return
		}
		if n > 0 {
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
	}
}

// C receives after each burst of removals. It is closed when the watch
// ends: after Close, or when the directory is gone for good.
func (w *DirWatch) C() <-chan struct{} { return w.c }

// Close ends the watch.
func (w *DirWatch) Close() error { return w.f.Close() }
