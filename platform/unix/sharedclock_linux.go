package unix

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A SharedClock is one moment that processes share through a memfd of
// eight bytes: each may note a time in it (CLOCK_MONOTONIC, the same in
// every process) unless an earlier one is there, and learn the earliest.
// One process makes the file (NewSharedClockFile) and hands it to the
// others at a known descriptor, which each maps (OpenSharedClock).
type SharedClock struct {
	mem []byte
}

// NewSharedClockFile makes the memory of a SharedClock: a close-on-exec
// memfd named name, to hand to the processes that share it.
func NewSharedClockFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	if err := unix.Ftruncate(fd, 8); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("ftruncate", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenSharedClock maps the SharedClock on descriptor fd, if that is a
// memfd named name, and closes the descriptor (which a child must not
// inherit) either way. It returns nil when fd is no such clock.
func OpenSharedClock(fd int, name string) *SharedClock {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !strings.HasPrefix(link, "/memfd:"+name) {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size < 8 {
		return nil
	}
	mem, err := unix.Mmap(fd, 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &SharedClock{mem: mem}
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
			return now
		}
	}
}
