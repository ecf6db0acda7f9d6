package unix

import (
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A SharedClock is one moment that processes share through a memfd of
// sixteen bytes: each may note a time in it (CLOCK_MONOTONIC, the same in
// every process) unless an earlier one is there, and learn the earliest.
// Beside the time it counts the processes at work (Begin, End: for
// tether's guardians, those that hold an identity), which the others can
// wait for (WaitEnded), and names the one that acts for them all at the
// moment (Delegate). One process makes the file
// (NewSharedClockFile) and hands it to the others at a known descriptor,
// which each maps (OpenSharedClock).
//
// A clock of eight bytes (made by an older tether) has the time and no
// count.
type SharedClock struct {
	mem []byte
	id  uint64
}

// The clock's layout: the time, then the count, a futex word; and the
// futex(2) operations on that word, between processes (no
// FUTEX_PRIVATE_FLAG).
const (
	futexWait = 0
	futexWake = 1

	clockTimeSize   = 8
	clockCountAt    = 8
	clockDelegateAt = 12
	clockTotalSize  = 16
)

// NewSharedClockFile makes the memory of a SharedClock: a close-on-exec
// memfd named name, to hand to the processes that share it.
func NewSharedClockFile(name string) (*os.File, error) {
	f, err := newMemfd(name)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(clockTotalSize); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenSharedClock maps the SharedClock on descriptor fd, if that is a
// memfd named name, and closes the descriptor (which a child must not
// inherit) either way. It returns nil when fd is no such clock.
func OpenSharedClock(fd int, name string) *SharedClock {
	link, err := os.Readlink(selfFdPath(fd))
	if err != nil || !strings.HasPrefix(link, "/memfd:"+name) {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size < clockTimeSize {
		return nil
	}
	size := min(st.Size, clockTotalSize)
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &SharedClock{mem: mem, id: st.Ino}
}

// ID names the clock: the same in every process that shares it, and
// different for any other clock alive at the same time (the memfd's
// inode). A nil clock's is 0.
func (c *SharedClock) ID() uint64 {
	if c == nil {
		return 0
	}
	return c.id
}

// Earliest notes now unless an earlier time is there, and returns the
// earliest noted, as a time of this process's clock. A time noted more
// than window before now belongs to another moment: now replaces it. A
// nil clock returns now.
func (c *SharedClock) Earliest(now time.Time, window time.Duration) time.Time {
	if c == nil {
		return now
	}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return now
	}
	mine := uint64(ts.Nano())
	p := (*uint64)(unsafe.Pointer(&c.mem[0]))
	for {
		seen := atomic.LoadUint64(p)
		if seen != 0 && seen <= mine && mine-seen <= uint64(window) {
			return now.Add(-time.Duration(mine - seen))
		}
		if atomic.CompareAndSwapUint64(p, seen, mine) {
			if d := c.word(clockDelegateAt); d != nil && seen != 0 {
				atomic.StoreUint32(d, 0) // the last moment's delegate
			}
			return now
		}
	}
}

// word is the clock's 32-bit word at offset at, nil when the clock has
// none (a clock of eight bytes, or no clock).
func (c *SharedClock) word(at int) *uint32 {
	if c == nil || len(c.mem) < at+4 {
		return nil
	}
	return (*uint32)(unsafe.Pointer(&c.mem[at]))
}

// Delegate elects, among the processes of the clock's moment, the one
// that acts for them all: self when none is named yet, or when the one
// named is no longer alive (by alive), since the work is then nobody's.
// It returns the one named and whether that is self. A clock without a
// delegate's word, or none, names self.
func (c *SharedClock) Delegate(self int, alive func(pid int) bool) (int, bool) {
	p := c.word(clockDelegateAt)
	if p == nil {
		return self, true
	}
	for {
		cur := int(atomic.LoadUint32(p))
		switch {
		case cur == self:
			return self, true
		case cur != 0 && alive(cur):
			return cur, false
		}
		if atomic.CompareAndSwapUint32(p, uint32(cur), uint32(self)) {
			return self, true
		}
	}
}

// count is the clock's count of processes at work, nil when it has none.
func (c *SharedClock) count() *uint32 { return c.word(clockCountAt) }

// Begin counts this process as at work, until End.
func (c *SharedClock) Begin() {
	if p := c.count(); p != nil {
		atomic.AddUint32(p, 1)
	}
}

// End ends what Begin counted; the last to end wakes one WaitEnded, which
// wakes the next with Leave, and so on.
func (c *SharedClock) End() {
	p := c.count()
	if p == nil {
		return
	}
	for {
		n := atomic.LoadUint32(p)
		if n == 0 {
			return // none counted: nothing to take back
		}
		if atomic.CompareAndSwapUint32(p, n, n-1) {
			if n == 1 {
				wakeOne(p)
			}
			return
		}
	}
}

// WaitEnded waits until no process is at work, or
// for at most limit, and reports whether none is. A process that died at
// work never ends: limit bounds the wait for it. A clock without a count,
// or none, has nobody to wait for.
func (c *SharedClock) WaitEnded(limit time.Duration) bool {
	p := c.count()
	if p == nil {
		return true
	}
	deadline := time.Now().Add(limit)
	for {
		n := atomic.LoadUint32(p)
		if n == 0 {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// It returns at once if the count changed since the load.
		ts := unix.NsecToTimespec(int64(left))
		_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(p)), futexWait, uintptr(n), uintptr(unsafe.Pointer(&ts)), 0, 0)
	}
}

// Leave wakes the next process that waits in WaitEnded, if any: the
// processes that waited leave one after the other, each as it goes,
// rather than all at once.
func (c *SharedClock) Leave() {
	if p := c.count(); p != nil && atomic.LoadUint32(p) == 0 {
		wakeOne(p)
	}
}

// wakeOne wakes one process waiting on the futex word p.
func wakeOne(p *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(p)), futexWake, 1, 0, 0, 0)
}
