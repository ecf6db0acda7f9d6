package guardian

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The guardians of one owner share the moment its death was first seen.
//
// Every guardian counts its stop timeout from its owner's death (I2), and
// it sees that death as the EOF of its tether. When an owner with
// hundreds of agents dies, its guardians wake together, on few cores, and
// some see the EOF a good while after the first: counted from there, the
// last trees would be killed that much past the stop timeout. So the
// owner hands each guardian, as descriptor 4, the same small shared
// memory (a memfd), and at the EOF each guardian notes in it the time it
// saw (CLOCK_MONOTONIC, the same in every process) unless an earlier one
// is there already, and counts from the earliest.
//
// An earlier time that is more than deathWindow before a guardian's own
// EOF belongs to another EOF (a tether its owner closed on purpose, long
// before): that guardian counts from its own time, and notes it.

// deathClockFD is the descriptor the shared memory arrives on.
const deathClockFD = 4

// deathClockName names the memfd; a descriptor 4 that is not one is not
// used.
const deathClockName = "tether-owner-death"

// deathWindow bounds how much later than the first a guardian may see
// the same death.
const deathWindow = time.Second

// ownerDeathFile is this process's memfd, made once and handed to every
// guardian it starts; nil when it could not be made (the guardians then
// count from their own EOF).
var ownerDeathFile = sync.OnceValue(func() *os.File {
	fd, err := unix.MemfdCreate(deathClockName, unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.Ftruncate(fd, 8); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), deathClockName)
})

// deathClock is a guardian's view of the shared memory.
type deathClock struct {
	mem []byte
}

// openDeathClock maps the memory on descriptor 4, if that is what it
// is, and closes the descriptor, which the agent must not inherit.
func openDeathClock() *deathClock {
	link, err := os.Readlink("/proc/self/fd/4")
	if err != nil || !strings.HasPrefix(link, "/memfd:"+deathClockName) {
		return nil
	}
	defer unix.Close(deathClockFD)
	var st unix.Stat_t
	if err := unix.Fstat(deathClockFD, &st); err != nil || st.Size < 8 {
		return nil
	}
	mem, err := unix.Mmap(deathClockFD, 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &deathClock{mem: mem}
}

// first notes now, when this guardian saw its owner's EOF, and returns
// the earliest time a guardian of the same owner saw it.
func (c *deathClock) first(now time.Time) time.Time {
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
		if seen != 0 && seen <= mine && mine-seen <= uint64(deathWindow) {
			return now.Add(-time.Duration(mine - seen))
		}
		if atomic.CompareAndSwapUint64(p, seen, mine) {
			return now
		}
	}
}
