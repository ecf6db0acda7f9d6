package unix

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Processes that share a clock learn the earliest time any of them noted;
// a time older than the window is another moment's.
func TestSharedClockKeepsTheEarliest(t *testing.T) {
	const name = "tether-test-clock"
	f, err := NewSharedClockFile(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opened := func() *SharedClock {
		fd, err := unix.Dup(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		c := OpenSharedClock(fd, name)
		if c == nil {
			t.Fatalf("descriptor %d, a dup of the clock's memfd: no clock", fd)
		}
		t.Cleanup(func() { _ = unix.Munmap(c.mem) })
		return c
	}
	a, b := opened(), opened()
	const window = 200 * time.Millisecond
	t0 := time.Now()
	if got := a.Earliest(t0, window); !got.Equal(t0) {
		t.Fatalf("the first to note: %v, want its own time %v", got, t0)
	}
	time.Sleep(50 * time.Millisecond)
	t1 := time.Now()
	if got := b.Earliest(t1, window); got.After(t0.Add(5*time.Millisecond)) || got.Before(t0.Add(-5*time.Millisecond)) {
		t.Fatalf("a later one: %v (%v before its own), want about the first's %v", got, t1.Sub(got), t0)
	}
	time.Sleep(window + 50*time.Millisecond)
	t2 := time.Now()
	if got := b.Earliest(t2, window); !got.Equal(t2) {
		t.Fatalf("long after: %v, want its own time %v", got, t2)
	}

	// A descriptor that is not such a memfd is no clock, and stays open.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := p[0], p[1]
	defer unix.Close(r)
	defer unix.Close(w)
	if c := OpenSharedClock(r, name); c != nil {
		t.Fatal("a pipe was taken for a clock")
	}
	if _, err := unix.FcntlInt(uintptr(r), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the pipe was closed: %v", err)
	}
}
