package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/logline"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// stubbornScript is the agent of BenchmarkServiceKillStubborn: the tree
// of BenchmarkService (a shell that puts a sleep in the background and
// execs another), with SIGTERM ignored, which both sleeps inherit. Only
// the SIGKILL at the end of the stop timeout ends it.
const stubbornScript = "trap '' TERM; sleep 100000 & exec sleep 100000"

// stubbornStopTimeout is the stop timeout of every stubborn agent.
const stubbornStopTimeout = time.Second

// BenchmarkServiceKillStubborn measures invariant I2 at scale for trees
// that ignore SIGTERM: a service runs many agents (200, see agentsEnv),
// each a tree of two sleeps that ignore SIGTERM, each with stop_timeout
// 1s, and is SIGKILLed. Every guardian sees its owner die, asks its tree
// to stop, and kills it once the stop timeout has passed. I2 promises
// every tree gone, every private directory removed and every lock free
// within the stop timeout plus 100 ms of the kill.
//
// Each iteration is one service lifetime in the same world: start the
// service, wait until every agent runs, SIGKILL it, and watch (as
// BenchmarkService does, see killAndWatchEach) until everything is gone.
//
//   - down-p50-ms, down-max-ms: from just before the SIGKILL until every
//     tree is dead, every private directory removed and every lock free;
//   - tree-first-min-ms: the earliest any tree died, over all lifetimes:
//     at least the stop timeout, or a tree was killed before its time;
//   - tree-last-max-ms, dirs-max-ms, locks-max-ms: when each part alone
//     was done, the worst lifetime's;
//   - watchers-cpu-max-ms: the CPU the benchmark's own watching took
//     from the kill to the end, the worst lifetime's.
//
// Run it as TETHER_BENCH_AGENTS=100 go test ./bench/ -run '^$'
// -bench ServiceKillStubborn -benchtime=3x: 5 to 15 s a lifetime here.
func BenchmarkServiceKillStubborn(b *testing.B) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorldOf(b, n, treeAgent{script: stubbornScript, stopTimeout: stubbornStopTimeout})
	u := newUndo(b)

	var down, last, dirs, locks, watchers []time.Duration
	first := time.Duration(-1)
	for b.Loop() {
		b.StopTimer()
		t, err := w.stubbornLifetime(u, exe)
		if err != nil {
			b.Fatal(err)
		}
		down, last = append(down, t.all), append(last, t.treeLast)
		dirs, locks = append(dirs, t.dirs), append(locks, t.locks)
		watchers = append(watchers, t.watchers)
		if first < 0 || t.treeFirst < first {
			first = t.treeFirst
		}
		b.Logf("%d stubborn trees: first dead %.0f ms, last %.0f ms, dirs removed %.0f ms, locks free %.0f ms after the service's SIGKILL; the watchers took %.1f ms of CPU",
			n, millis(t.treeFirst), millis(t.treeLast), millis(t.dirs), millis(t.locks), millis(t.watchers))
		if g, err := w.guardianTimes(t.killed); err == nil {
			b.Logf("the guardians' logs: owner's death seen %.0f-%.0f ms, teardown done %.0f-%.0f ms after the SIGKILL (to the millisecond)",
				millis(g.seenFirst), millis(g.seenLast), millis(g.doneFirst), millis(g.doneLast))
		} else {
			b.Logf("the guardians' logs: %v", err)
		}
		b.StartTimer()
	}
	reportDurations(b, "down-", down)
	b.ReportMetric(millis(first), "tree-first-min-ms")
	b.ReportMetric(millis(quantile(last, 1)), "tree-last-max-ms")
	b.ReportMetric(millis(quantile(dirs, 1)), "dirs-max-ms")
	b.ReportMetric(millis(quantile(locks, 1)), "locks-max-ms")
	b.ReportMetric(millis(quantile(watchers, 1)), "watchers-cpu-max-ms")
	promise := millis(stubbornStopTimeout + 100*time.Millisecond)
	checkTarget(b, "cleanup after the service's SIGKILL (stop timeout + 100 ms)", millis(quantile(down, 1)), promise, "ms")
	if first < stubbornStopTimeout {
		b.Errorf("a tree died %v after the service's SIGKILL, before its stop timeout of %v", first, stubbornStopTimeout)
	}
}

// stubbornTimes says when, after the service's SIGKILL, each part of the
// cleanup was seen done.
type stubbornTimes struct {
	killed                                time.Time // just before the SIGKILL
	treeFirst, treeLast, dirs, locks, all time.Duration
	// watchers is the CPU time this process took meanwhile: what the
	// watching cost the machine it measures.
	watchers time.Duration
}

// processCPU is the CPU time this process has taken so far, user and
// system.
func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stubbornLifetime runs the world's service until every agent runs,
// SIGKILLs it and watches the cleanup.
func (w *svcWorld) stubbornLifetime(u *undo, exe string) (stubbornTimes, error) {
	s, err := w.startService(exe)
	if err != nil {
		return stubbornTimes{}, err
	}
	undoKey := u.add(s.abort)
	up, err := s.waitRunning(upLimit)
	if err != nil {
		return stubbornTimes{}, fmt.Errorf("%v\nservice log:\n%s", err, s.output())
	}
	trees, err := waitTrees(up.rows, waitLimit)
	if err != nil {
		return stubbornTimes{}, err
	}
	t, err := s.killAndWatchEach(trees, waitLimit)
	if err != nil {
		return t, fmt.Errorf("%v\nservice log:\n%s", err, s.output())
	}
	if err := s.finish(trees); err != nil {
		return t, err
	}
	u.drop(undoKey)
	return t, nil
}

// killAndWatchEach is killAndWatch, telling apart the first tree to die
// and the last. The watchers wait on events, not on a clock, so that
// what they cost does not come out of the two cores whose work they
// time: the trees in one epoll(7) instance holding the pidfd of every
// member; the private directories in an inotify watch of each identity's
// directory, each event followed by a look at the remaining names in
// order; each lock in a blocking flock of its own, which the kernel
// grants when the guardian lets go. Every watcher is on a thread of its
// own, real-time as root (see raisePriority), so that none waits for
// the guardians it watches to be scheduled.
func (s *svc) killAndWatchEach(trees []tree, within time.Duration) (stubbornTimes, error) {
	var t stubbornTimes
	// fds holds a pidfd for every member of every tree, and treeOf the
	// index of the tree each pidfd's member belongs to.
	var fds []int32
	treeOf := map[int32]int{}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.close()
		}
	}()
	members := make([]int, len(trees)) // members of tree i not seen dead
	for i, tr := range trees {
		for _, m := range tr.members {
			p, err := openProc(m.Ref())
			if err != nil {
				return t, fmt.Errorf("agent %s: %w", tr.id, err)
			}
			procs = append(procs, p)
			fds = append(fds, int32(p.fd))
			treeOf[int32(p.fd)] = i
			members[i]++
		}
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return t, fmt.Errorf("epoll: %w", err)
	}
	defer unix.Close(ep)
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: fd}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
			return t, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	lockPaths := make([]string, len(trees))
	for i, tr := range trees {
		lockPaths[i] = filepath.Join(s.w.paths.lockDir, guardian.Key(identityOf(tr.id))+".lock")
		f, err := punix.OpenLockFile(lockPaths[i])
		if err != nil {
			return t, err
		}
		err = punix.TryLock(f)
		f.Close()
		if !errors.Is(err, punix.ErrLocked) {
			return t, fmt.Errorf("the lock of %s is not held while it runs (TryLock: %v)", tr.id, err)
		}
	}
	found, err := guardian.PrivateDirs(s.w.paths.privateRoot)
	if err != nil || len(found) != len(trees) {
		return t, fmt.Errorf("%s holds %d private directories, want one per agent, %d (%v)", s.w.paths.privateRoot, len(found), len(trees), err)
	}
	notify, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return t, fmt.Errorf("inotify: %w", err)
	}
	defer unix.Close(notify)
	// Each in the directory of its identity: a watch of each.
	var dirs []string
	for _, d := range found {
		dirs = append(dirs, d.Path)
		if _, err := unix.InotifyAddWatch(notify, filepath.Dir(d.Path), unix.IN_DELETE|unix.IN_MOVED_FROM); err != nil {
			return t, fmt.Errorf("inotify %s: %w", filepath.Dir(d.Path), err)
		}
	}

	var left struct{ trees, dirs, locks int }
	var leftMu sync.Mutex
	left.trees, left.dirs, left.locks = len(trees), len(dirs), len(lockPaths)
	// Each lock's watcher opens the file for itself and ends by closing
	// it: one that is still blocked when the time is up (the test has
	// failed then) takes the lock whenever it comes free, and lets go.
	lockFree := make(chan time.Time, len(lockPaths))
	lockReady := make(chan error, len(lockPaths))
	for _, path := range lockPaths {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer raisePriority()()
			f, err := punix.OpenLockFile(path)
			lockReady <- err
			if err != nil {
				return
			}
			defer f.Close()
			for unix.Flock(int(f.Fd()), unix.LOCK_EX) == unix.EINTR {
			}
			lockFree <- time.Now()
		}()
	}
	for range lockPaths {
		if err := <-lockReady; err != nil {
			return t, err
		}
	}

	begin := time.Now()
	end := begin.Add(within)
	var wg sync.WaitGroup
	// watch runs fn on a thread of its own.
	watch := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer raisePriority()()
			fn()
		}()
	}
	// until is what is left of the time, for a ppoll.
	until := func() (*unix.Timespec, bool) {
		d := time.Until(end)
		ts := unix.NsecToTimespec(int64(d))
		return &ts, d > 0
	}
	// The trees: each epoll_wait returns the members that died since the
	// last, each member once (EPOLLONESHOT), whatever the number alive.
	watch(func() {
		living := len(trees)
		events := make([]unix.EpollEvent, len(fds))
		for dead := 0; dead < len(fds); {
			ms := int(time.Until(end) / time.Millisecond)
			if ms <= 0 {
				return
			}
			n, err := unix.EpollWait(ep, events, ms)
			if err != nil || n == 0 {
				continue
			}
			at := time.Since(begin)
			for _, ev := range events[:n] {
				dead++
				i := treeOf[ev.Fd]
				if members[i]--; members[i] == 0 {
					living--
					if t.treeFirst == 0 {
						t.treeFirst = at
					}
					if living == 0 {
						t.treeLast = at
					}
				}
			}
			leftMu.Lock()
			left.trees = living
			leftMu.Unlock()
		}
	})
	// The directories: a look at the names left after each batch of
	// events (and once before the first).
	watch(func() {
		buf := make([]byte, 64<<10)
		pfd := []unix.PollFd{{Fd: int32(notify), Events: unix.POLLIN}}
		i := 0
		for {
			for i < len(dirs) {
				if _, err := os.Lstat(dirs[i]); !errors.Is(err, fs.ErrNotExist) {
					break
				}
				i++
			}
			leftMu.Lock()
			left.dirs = len(dirs) - i
			leftMu.Unlock()
			if i == len(dirs) {
				t.dirs = time.Since(begin)
				return
			}
			ts, ok := until()
			if !ok {
				return
			}
			if n, err := unix.Ppoll(pfd, ts, nil); err != nil || n == 0 {
				continue
			}
			for {
				if n, err := unix.Read(notify, buf); n <= 0 || err != nil {
					break
				}
			}
		}
	})
	// The locks: the last to come free.
	watch(func() {
		for range lockPaths {
			select {
			case at := <-lockFree:
				t.locks = at.Sub(begin)
				leftMu.Lock()
				left.locks--
				leftMu.Unlock()
			case <-time.After(time.Until(end)):
				return
			}
		}
	})

	if err := s.cmd.Process.Kill(); err != nil {
		return t, fmt.Errorf("killing the service: %w", err)
	}
	t.killed = begin
	cpu0 := processCPU()
	wg.Wait()
	t.watchers = processCPU() - cpu0
	if left.trees > 0 || left.dirs > 0 || left.locks > 0 {
		return t, fmt.Errorf("%v after the service's SIGKILL: %d tree(s) alive, %d private dir(s) left, %d lock(s) held",
			within, left.trees, left.dirs, left.locks)
	}
	if left, err := guardian.PrivateDirs(s.w.paths.privateRoot); err != nil || len(left) != 0 {
		return t, fmt.Errorf("%s holds %d private directories after the cleanup (%v)", s.w.paths.privateRoot, len(left), err)
	}
	t.all = max(t.treeLast, t.dirs, t.locks)
	return t, nil
}

// raisePriority makes the calling thread a real-time one (SCHED_FIFO,
// the lowest real-time priority), as root, and returns what puts it
// back. With hundreds of guardians runnable at once, a nice value alone
// left the watchers whole tenths of a second behind what they watch;
// they wake only on what they wait for, so they take little.
func raisePriority() (undo func()) {
	if os.Geteuid() != 0 {
		return func() {}
	}
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return func() {}
	}
	rt := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
	if unix.SchedSetAttr(0, &rt, 0) != nil {
		return func() {}
	}
	return func() { _ = unix.SchedSetAttr(0, old, 0) }
}

// guardianSpan is what the guardians' own log lines say of a teardown
// after the service's SIGKILL: when the first and the last saw their
// owner die, and when the first and the last were done.
type guardianSpan struct {
	seenFirst, seenLast, doneFirst, doneLast time.Duration
}

// guardianTimes reads, in every agent's log, the guardian's lines of the
// teardown that followed the SIGKILL at killed.
func (w *svcWorld) guardianTimes(killed time.Time) (guardianSpan, error) {
	var g guardianSpan
	var seen, done []time.Duration
	for _, id := range w.ids {
		b, err := os.ReadFile(filepath.Join(w.dir, "state", "tether", svcProfile, "logs", id+".log"))
		if err != nil {
			return g, err
		}
		for line := range strings.Lines(string(b)) {
			msg, ok := logline.Message(line)
			if !ok {
				continue
			}
			stamp, _, _ := strings.Cut(line, " ")
			at, err := time.Parse(logline.TimeFormat, stamp)
			// Millisecond stamps: a line of this teardown may read
			// up to a millisecond before the kill.
			if err != nil || at.Before(killed.Add(-time.Millisecond)) {
				continue
			}
			switch {
			case strings.HasPrefix(msg, "stopping (owner_lost)"):
				seen = append(seen, at.Sub(killed))
			case strings.HasPrefix(msg, "stopped (owner_lost)"):
				done = append(done, at.Sub(killed))
			}
		}
	}
	if len(seen) != len(w.ids) || len(done) != len(w.ids) {
		return g, fmt.Errorf("%d agents, %d guardians logged the owner's death and %d their teardown's end", len(w.ids), len(seen), len(done))
	}
	return guardianSpan{slices.Min(seen), slices.Max(seen), slices.Min(done), slices.Max(done)}, nil
}
