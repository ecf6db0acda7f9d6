package unix

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// IdleClass moves every thread of the process, the ones started before it
// on goroutines locked to them included, and a thread started after it
// inherits the class. It runs in a copy of the test binary of its own:
// the class cannot be undone without privilege.
func TestIdleClassMovesEveryThread(t *testing.T) {
	if !isolated(t) {
		return
	}
	// Threads of their own, started before the call: locked goroutines
	// that wait until the end.
	release := make(chan struct{})
	var wg sync.WaitGroup
	started := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- struct{}{}
			<-release
		})
	}
	for range 3 {
		<-started
	}
	defer func() {
		close(release)
		wg.Wait()
	}()
	if p := policies(t); len(p[unix.SCHED_IDLE]) != 0 {
		t.Fatalf("threads in SCHED_IDLE before IdleClass: %v", p)
	}
	if err := IdleClass(); err != nil {
		t.Fatal(err)
	}
	// A thread the runtime starts afterwards, for a new locked goroutine.
	after := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		after <- unix.Gettid()
		<-release
	}()
	tid := <-after
	p := policies(t)
	if len(p) != 1 || len(p[unix.SCHED_IDLE]) == 0 {
		t.Fatalf("threads by policy after IdleClass: %v, want all in SCHED_IDLE (%d)", p, unix.SCHED_IDLE)
	}
	found := false
	for _, id := range p[unix.SCHED_IDLE] {
		found = found || id == tid
	}
	if !found {
		t.Errorf("the thread started after IdleClass (%d) is not among %v", tid, p[unix.SCHED_IDLE])
	}
}

// policies returns the threads of the process by scheduling policy.
func policies(t *testing.T) map[uint32][]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint32][]int{}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			t.Fatalf("sched_getattr %d: %v", tid, err)
		}
		out[attr.Policy] = append(out[attr.Policy], tid)
	}
	return out
}
