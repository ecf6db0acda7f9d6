package unix

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Processes that share a clock learn the earliest time any of them noted;
// a time older than the window is another moment's.
func TestSharedClockKeepsTheEarliest(t *testing.T) {
	const name = "tether-test-clock"
	a, b := twoClocks(t, name)
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

// twoClocks makes the memory of a clock named name and maps it twice, as
// two processes handed it would.
func twoClocks(t *testing.T, name string) (a, b *SharedClock) {
	t.Helper()
	f, err := NewSharedClockFile(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return openedClock(t, f, name), openedClock(t, f, name)
}

// openedClock maps a dup of f, the memory of a clock named name, as a
// process handed it would.
func openedClock(t *testing.T, f *os.File, name string) *SharedClock {
	t.Helper()
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

// The processes that share a clock count those still at work: a wait
// ends only once every one has ended, then the waiters go one at a time,
// each letting the next go as it leaves.
func TestSharedClockCountsThoseAtWork(t *testing.T) {
	a, b := twoClocks(t, "tether-test-count")
	a.Begin()
	b.Begin()
	if a.WaitEnded(20 * time.Millisecond) {
		t.Fatal("a wait ended with two at work")
	}

	// Two waiters, one on each mapping; each says which it was.
	ended := make(chan *SharedClock, 2)
	for _, c := range []*SharedClock{a, b} {
		go func() {
			if c.WaitEnded(10 * time.Second) {
				ended <- c
			} else {
				ended <- nil
			}
		}()
	}
	quiet := func(what string, d time.Duration) {
		t.Helper()
		select {
		case c := <-ended:
			t.Fatalf("%s: a wait ended (%v)", what, c != nil)
		case <-time.After(d):
		}
	}
	within := func(what string) *SharedClock {
		t.Helper()
		select {
		case c := <-ended:
			if c == nil {
				t.Fatalf("%s: the wait ran out", what)
			}
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no wait ended within 5s", what)
			return nil
		}
	}
	a.End()
	quiet("one still at work", 100*time.Millisecond)
	b.End()
	first := within("the last one ended")
	quiet("the first waiter has not left", 100*time.Millisecond)
	first.Leave()
	within("the first waiter left")

	// An End with none counted does not wrap the count around.
	b.End()
	a.Begin()
	if a.WaitEnded(20 * time.Millisecond) {
		t.Fatal("a wait ended with one at work, after an End with none counted")
	}
	a.End()
	if !a.WaitEnded(time.Second) {
		t.Fatal("the wait did not end with none at work")
	}
}

// A clock of eight bytes, as an older tether made it, has the time and
// no count: nobody is waited for.
func TestSharedClockOfEightBytesHasNoCount(t *testing.T) {
	const name = "tether-test-old-clock"
	f, err := newMemfd(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(clockTimeSize); err != nil {
		t.Fatal(err)
	}
	c := openedClock(t, f, name)
	c.Begin()
	if !c.WaitEnded(5 * time.Second) {
		t.Fatal("a clock without a count waited")
	}
	now := time.Now()
	if got := c.Earliest(now, time.Second); !got.Equal(now) {
		t.Fatalf("its time: %v, want %v", got, now)
	}
}

// One process of a moment is its delegate: the first to ask, then, once
// it is dead, the next to ask; a new moment has none until one asks.
func TestSharedClockDelegate(t *testing.T) {
	a, b := twoClocks(t, "tether-test-delegate")
	dead := map[int]bool{}
	alive := func(pid int) bool { return !dead[pid] }
	if d, mine := a.Delegate(100, alive); d != 100 || !mine {
		t.Fatalf("the first to ask: %d, %v; want itself", d, mine)
	}
	if d, mine := b.Delegate(200, alive); d != 100 || mine {
		t.Fatalf("the second: %d, %v; want the first", d, mine)
	}
	dead[100] = true
	if d, mine := b.Delegate(200, alive); d != 200 || !mine {
		t.Fatalf("once the first died: %d, %v; want the second", d, mine)
	}
	// A new moment (a time older than the window replaced) clears it.
	a.Earliest(time.Now(), time.Second)
	time.Sleep(20 * time.Millisecond)
	a.Earliest(time.Now(), 10*time.Millisecond)
	if d, mine := a.Delegate(100, alive); d != 100 || !mine {
		t.Fatalf("a new moment: %d, %v; want the first to ask", d, mine)
	}
}
