package unix

import (
	"slices"
	"sync"
)

// slowClose holds the descriptors of this process whose close waits on
// the kernel. On Linux that is an inotify instance that has had a watch:
// its close waits out an SRCU grace period, 5 to 20 ms, and so does the
// first return to user space of an execve that closed it on the way.
var slowClose struct {
	mu  sync.Mutex
	fds map[uintptr]struct{}
}

func noteSlowClose(fd uintptr) {
	slowClose.mu.Lock()
	defer slowClose.mu.Unlock()
	if slowClose.fds == nil {
		slowClose.fds = make(map[uintptr]struct{})
	}
	slowClose.fds[fd] = struct{}{}
}

// closeSlow closes a descriptor noted by noteSlowClose, with close: the
// note goes first, under the lock HoldSlowToClose takes, so a descriptor
// it returned stays this one until it is released.
func closeSlow(fd uintptr, close func() error) error {
	slowClose.mu.Lock()
	delete(slowClose.fds, fd)
	err := close()
	slowClose.mu.Unlock()
	return err
}

// HoldSlowToClose returns the descriptors of this process whose close
// waits on the kernel, and holds them open until release is called: a
// process about to execve hands them to its new image rather than have
// the exec close them (and the new image wait) on its way, and the new
// image closes them once it has nothing better to do (CloseLater).
func HoldSlowToClose() (fds []uintptr, release func()) {
	slowClose.mu.Lock()
	for fd := range slowClose.fds {
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	return fds, sync.OnceFunc(slowClose.mu.Unlock)
}
