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
// service, wait until every agent runs, SIGKILL it, and watch (every
// millisecond, as BenchmarkService does) until everything is gone.
//
//   - down-p50-ms, down-max-ms: from just before the SIGKILL until every
//     tree is dead, every private directory removed and every lock free;
//   - tree-first-min-ms: the earliest any tree died, over all lifetimes:
//     at least the stop timeout, or a tree was killed before its time;
//   - tree-last-max-ms, dirs-max-ms, locks-max-ms: when each part alone
//     was done, the worst lifetime's.
//
// Run it as TETHER_BENCH_AGENTS=100 go test ./bench/ -run '^$'
// -bench ServiceKillStubborn -benchtime=3x: 5 to 15 s a lifetime here.
func BenchmarkServiceKillStubborn(b *testing.B) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorldOf(b, n, treeAgent{script: stubbornScript, stopTimeout: stubbornStopTimeout})
	u := newUndo(b)

	var down, last, dirs, locks []time.Duration
	first := time.Duration(-1)
	for b.Loop() {
		b.StopTimer()
		t, err := w.stubbornLifetime(u, exe)
		if err != nil {
			b.Fatal(err)
		}
		down, last = append(down, t.all), append(last, t.treeLast)
		dirs, locks = append(dirs, t.dirs), append(locks, t.locks)
		if first < 0 || t.treeFirst < first {
			first = t.treeFirst
		}
		b.Logf("%d stubborn trees: first dead %.0f ms, last %.0f ms, dirs removed %.0f ms, locks free %.0f ms after the service's SIGKILL",
			n, millis(t.treeFirst), millis(t.treeLast), millis(t.dirs), millis(t.locks))
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
// and the last. Three watchers look at once, each on a thread of its own
// (real-time as root, see raisePriority; each sleeps a millisecond
// between looks), so that none waits for another: the
// trees in ppoll(2) on their pidfds; the private directories by name
// (a listing of the private root would wait for that directory's lock
// behind the guardians' removals); the locks by flock.
func (s *svc) killAndWatchEach(trees []tree, within time.Duration) (stubbornTimes, error) {
	var t stubbornTimes
	// alive[i] holds the pidfds of tree i's members not yet seen dead.
	alive := make([][]unix.PollFd, len(trees))
	var procs []*proc
	defer func() {
		for _, p := range procs {
			p.close()
		}
	}()
	for i, tr := range trees {
		for _, m := range tr.members {
			p, err := openProc(m.Ref())
			if err != nil {
				return t, fmt.Errorf("agent %s: %w", tr.id, err)
			}
			procs = append(procs, p)
			alive[i] = append(alive[i], unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
		}
	}
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for _, tr := range trees {
		f, err := punix.OpenLockFile(filepath.Join(s.w.paths.lockDir, guardian.Key(identityOf(tr.id))+".lock"))
		if err != nil {
			return t, err
		}
		held = append(held, f)
		if err := punix.TryLock(f); !errors.Is(err, punix.ErrLocked) {
			return t, fmt.Errorf("the lock of %s is not held while it runs (TryLock: %v)", tr.id, err)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(s.w.paths.privateRoot, "*"))
	if err != nil || len(dirs) != len(trees) {
		return t, fmt.Errorf("%s holds %d entries, want one private directory per agent, %d (%v)", s.w.paths.privateRoot, len(dirs), len(trees), err)
	}
	locks := held

	begin := time.Now()
	end := begin.Add(within)
	var left struct{ trees, dirs, locks int }
	var leftMu sync.Mutex
	left.trees, left.dirs, left.locks = len(trees), len(dirs), len(locks)
	var wg sync.WaitGroup
	// watch runs look on a thread of its own until it says it is done or
	// the time is up; look waits at most downEvery.
	watch := func(look func() (done bool)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer raisePriority()()
			for !look() && time.Now().Before(end) {
			}
		}()
	}
	nap := func() {
		ts := downEvery
		_ = unix.Nanosleep(&ts, nil)
	}
	// The trees: a ppoll on every pidfd not seen dead ends at the first
	// death, or after downEvery.
	living := len(trees)
	watch(func() bool {
		var all []unix.PollFd
		for i := range alive {
			if len(alive[i]) == 0 {
				continue
			}
			if alive[i] = stillAlive(alive[i]); len(alive[i]) == 0 {
				living--
				at := time.Since(begin)
				if t.treeFirst == 0 {
					t.treeFirst = at
				}
				if living == 0 {
					t.treeLast = at
				}
			}
			all = append(all, alive[i]...)
		}
		leftMu.Lock()
		left.trees = living
		leftMu.Unlock()
		if len(all) == 0 {
			return true
		}
		ts := downEvery
		_, _ = unix.Ppoll(all, &ts, nil)
		return false
	})
	// watchGone looks at the items of a list in order, each until it is
	// gone, and notes when the last one was.
	watchGone := func(n int, gone func(i int) bool, left *int, at *time.Duration) {
		i := 0
		watch(func() bool {
			for i < n && gone(i) {
				i++
			}
			leftMu.Lock()
			*left = n - i
			leftMu.Unlock()
			if i == n {
				*at = time.Since(begin)
				return true
			}
			nap()
			return false
		})
	}
	watchGone(len(dirs), func(i int) bool {
		_, err := os.Lstat(dirs[i])
		return errors.Is(err, fs.ErrNotExist)
	}, &left.dirs, &t.dirs)
	watchGone(len(locks), func(i int) bool {
		if punix.TryLock(locks[i]) != nil {
			return false
		}
		_ = punix.Unlock(locks[i])
		return true
	}, &left.locks, &t.locks)

	if err := s.cmd.Process.Kill(); err != nil {
		return t, fmt.Errorf("killing the service: %w", err)
	}
	t.killed = begin
	wg.Wait()
	if t.treeLast == 0 || t.dirs == 0 || t.locks == 0 {
		return t, fmt.Errorf("%v after the service's SIGKILL: %d tree(s) alive, %d private dir(s) left, %d lock(s) held",
			within, left.trees, left.dirs, left.locks)
	}
	if n, err := dirEntries(s.w.paths.privateRoot); err != nil || n != 0 {
		return t, fmt.Errorf("%s holds %d entries after the cleanup (%v)", s.w.paths.privateRoot, n, err)
	}
	t.all = max(t.treeLast, t.dirs, t.locks)
	return t, nil
}

// raisePriority makes the calling thread a real-time one (SCHED_FIFO,
// the lowest real-time priority), as root, and returns what puts it
// back. With hundreds of guardians runnable at once, a nice value alone
// left the watchers whole tenths of a second behind what they watch;
// they sleep between looks, so they take little.
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
