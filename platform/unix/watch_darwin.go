package unix

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// osWatch is a kqueue. A vnode event needs a descriptor of the file it
// watches, so while armed the directory and each of its regular files
// are open (O_EVTONLY: for events only, never keeping a volume busy);
// the first event closes them all, which removes their events. The
// reader is a goroutine blocked in kevent(2) with no timeout; a user
// event wakes it at Close.
type osWatch struct {
	kq  int
	fds []int // open while armed, under WriteWatch.mu
	err error // why the kqueue broke, under WriteWatch.mu
}

// WatchWrites returns a watch of the files directly inside dir, not yet
// armed.
func WatchWrites(dir string) (*WriteWatch, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, os.NewSyscallError("kqueue", err)
	}
	unix.CloseOnExec(kq)
	var wake unix.Kevent_t
	unix.SetKevent(&wake, 0, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, []unix.Kevent_t{wake}, nil, nil); err != nil {
		unix.Close(kq)
		return nil, os.NewSyscallError("kevent", err)
	}
	w := &WriteWatch{dir: dir, c: make(chan struct{}, 1)}
	w.os.kq = kq
	go w.os.read(w)
	return w, nil
}

func vnodeEvent(fd int, fflags uint32) unix.Kevent_t {
	var ev unix.Kevent_t
	unix.SetKevent(&ev, fd, unix.EVFILT_VNODE, unix.EV_ADD|unix.EV_CLEAR|unix.EV_ONESHOT)
	ev.Fflags = fflags
	return ev
}

func (o *osWatch) arm(w *WriteWatch) error {
	if o.err != nil {
		return o.err
	}
	if len(o.fds) > 0 {
		return nil // armed already
	}
	dir, err := unix.Open(w.dir, unix.O_EVTONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: w.dir, Err: err}
	}
	fds := []int{dir}
	evs := []unix.Kevent_t{vnodeEvent(dir, unix.NOTE_WRITE|unix.NOTE_DELETE|unix.NOTE_RENAME)}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		unix.Close(dir)
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fd, err := unix.Open(filepath.Join(w.dir, e.Name()), unix.O_EVTONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // removed meanwhile: the directory's event tells
		}
		fds = append(fds, fd)
		evs = append(evs, vnodeEvent(fd, unix.NOTE_WRITE|unix.NOTE_EXTEND|unix.NOTE_DELETE|unix.NOTE_RENAME))
	}
	o.fds = fds
	if _, err := unix.Kevent(o.kq, evs, nil, nil); err != nil {
		o.disarm()
		return os.NewSyscallError("kevent", err)
	}
	return nil
}

// disarm closes the descriptors of an armed watch, and with them their
// events.
func (o *osWatch) disarm() {
	for _, fd := range o.fds {
		unix.Close(fd)
	}
	o.fds = nil
}

// close wakes the reader, which closes the kqueue.
func (o *osWatch) close() error {
	var wake unix.Kevent_t
	unix.SetKevent(&wake, 0, unix.EVFILT_USER, 0)
	wake.Fflags = unix.NOTE_TRIGGER
	_, err := unix.Kevent(o.kq, []unix.Kevent_t{wake}, nil, nil)
	return os.NewSyscallError("kevent", err)
}

// read waits for events until the watch is closed. An error of kevent
// breaks the watch: it fires once more, so its owner looks, and its next
// Arm says why.
func (o *osWatch) read(w *WriteWatch) {
	events := make([]unix.Kevent_t, 8)
	for {
		n, err := unix.Kevent(o.kq, nil, events, nil)
		if err == unix.EINTR {
			continue
		}
		w.mu.Lock()
		if w.closed {
			o.disarm()
			unix.Close(o.kq)
			w.mu.Unlock()
			return
		}
		if err != nil {
			o.err = fmt.Errorf("waiting on the kqueue watch of %s: %w", w.dir, err)
			o.disarm()
			w.mu.Unlock()
			w.fire()
			return
		}
		fired := false
		for _, ev := range events[:n] {
			fired = fired || ev.Filter == unix.EVFILT_VNODE
		}
		if fired {
			o.disarm()
		}
		w.mu.Unlock()
		if fired {
			w.fire()
		}
	}
}
