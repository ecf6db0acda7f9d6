package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/wire"
	"golang.org/x/sys/unix"
)

// politeTree is the agent of the kill benchmark: a bash script whose tree
// is the agent itself, a worker in a process group of its own (job
// control) and an escapee that double-forks into a session of its own
// (setsid -f forks; the child calls setsid and execs, the parent exits at
// once, so the guardian adopts the escapee). All three exit on SIGTERM at
// once: bash waiting in the wait builtin and sleep both die of it.
const politeTree = `set -m
sleep 1000 &
set +m
setsid -f sleep 1000
wait
`

// pollEvery is the period of the kill benchmark's measuring loop. It is
// slept in ppoll(2) or nanosleep(2), never in time.Sleep: the Go runtime
// rounds a timer shorter than a millisecond up to one when the thread
// blocks in epoll_wait, which would add up to a millisecond to every
// figure.
var pollEvery = unix.NsecToTimespec(int64(100 * time.Microsecond))

// BenchmarkOwnerKillCleanup measures invariant I2 for a polite tree: from
// just before the owner process is SIGKILLed until the agent's whole tree
// is dead (zombies count as dead), its private directory is removed and
// its ownership lock is free. The owner is a separate process (the test
// binary as runOwner) with nothing to tell its guardian but EOF on the
// tether.
//
// Metrics: p50-ms and max-ms for the whole cleanup; tree-p50-ms and
// tree-max-ms for the tree alone.
func BenchmarkOwnerKillCleanup(b *testing.B) {
	exe := tetherBinary(b)
	bash := lookPath(b, "bash")
	lookPath(b, "setsid")
	lookPath(b, "sleep")
	dir := b.TempDir()
	script := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(script, []byte(politeTree), 0o600); err != nil {
		b.Fatal(err)
	}
	spec := guardian.Spec{
		Identity:    "bench-kill@local",
		Profile:     "bench",
		Argv:        []string{bash, script},
		Env:         []string{"PATH=" + os.Getenv("PATH")},
		StopTimeout: guardian.DefaultStopTimeout,
		LockDir:     filepath.Join(dir, "locks"),
		PrivateRoot: filepath.Join(dir, "private"),
		LogPath:     filepath.Join(dir, "logs", "agent.log"),
		Executable:  exe,
	}
	u := newUndo(b)
	var all, tree []time.Duration
	for b.Loop() {
		b.StopTimer()
		r, err := startKillRun(u, spec)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t, err := r.killOwner(waitLimit)
		b.StopTimer()
		if err != nil {
			b.Fatalf("%v\nguardian log:\n%s", err, tail(spec.LogPath))
		}
		if err := r.finish(); err != nil {
			b.Fatalf("%v\nguardian log:\n%s", err, tail(spec.LogPath))
		}
		u.drop(r.undoKey)
		all = append(all, t.all)
		tree = append(tree, t.tree)
		b.StartTimer()
	}
	reportDurations(b, "", all)
	reportDurations(b, "tree-", tree)
	checkTarget(b, "median owner-kill cleanup", millis(quantile(all, 0.5)), 10, "ms")
	checkTarget(b, "max owner-kill cleanup", millis(quantile(all, 1)), 50, "ms")
}

// killRun is one owner with a running polite tree, ready to be killed.
type killRun struct {
	owner    *owner
	ready    wire.Ready
	guardian *proc
	tree     []*proc // agent, worker, escapee
	lock     *os.File
	undoKey  int
}

// startKillRun starts an owner for spec and waits until the agent's tree
// is complete. Whatever it started is registered with u.
func startKillRun(u *undo, spec guardian.Spec) (*killRun, error) {
	r := &killRun{}
	o, err := startOwner(spec)
	if o != nil {
		r.owner = o
		r.undoKey = u.add(r.abort)
	}
	if err != nil {
		return r, err
	}
	r.ready = *o.answer.Ready
	if r.guardian, err = openPid(r.ready.GuardianPID); err != nil {
		return r, fmt.Errorf("guardian: %w", err)
	}
	ms, err := waitPoliteTree(r.ready, waitLimit)
	if err != nil {
		return r, err
	}
	for _, m := range ms {
		p, err := openProc(m.Ref())
		if err != nil {
			return r, fmt.Errorf("tree member: %w", err)
		}
		r.tree = append(r.tree, p)
	}
	if r.lock, err = punix.OpenLockFile(r.ready.LockPath); err != nil {
		return r, err
	}
	if err := punix.TryLock(r.lock); !errors.Is(err, punix.ErrLocked) {
		return r, fmt.Errorf("lock %s is not held while the agent runs (TryLock: %v)", r.ready.LockPath, err)
	}
	return r, nil
}

// killTimes says when, after the kill, each part of the cleanup was seen
// done.
type killTimes struct {
	tree, dir, lock, all time.Duration
}

// killOwner SIGKILLs the owner and polls every pollEvery until the tree is
// dead, the private directory is gone and the lock is free, each checked
// in every round until seen done. While the tree lives, the pause is a
// ppoll on its pidfds, so its death ends the pause at once.
func (r *killRun) killOwner(within time.Duration) (killTimes, error) {
	// alive holds the pidfds of the members not yet seen dead.
	alive := make([]unix.PollFd, len(r.tree))
	for i, p := range r.tree {
		alive[i] = unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN}
	}
	var t killTimes
	begin := time.Now()
	if err := r.owner.cmd.Process.Kill(); err != nil {
		return t, fmt.Errorf("killing the owner: %w", err)
	}
	for {
		if t.tree == 0 {
			if alive = stillAlive(alive); len(alive) == 0 {
				t.tree = time.Since(begin)
			}
		}
		if t.dir == 0 {
			if _, err := os.Lstat(r.ready.PrivateDir); errors.Is(err, fs.ErrNotExist) {
				t.dir = time.Since(begin)
			}
		}
		if t.lock == 0 && punix.TryLock(r.lock) == nil {
			t.lock = time.Since(begin)
			_ = punix.Unlock(r.lock)
		}
		if t.tree != 0 && t.dir != 0 && t.lock != 0 {
			t.all = max(t.tree, t.dir, t.lock)
			return t, nil
		}
		if time.Since(begin) > within {
			var left []string
			for _, p := range r.tree {
				if !p.exited() {
					left = append(left, fmt.Sprintf("%d (%s)", p.pid, comm(p.pid)))
				}
			}
			return t, fmt.Errorf("%v after the owner's SIGKILL: alive %v, private dir removed %v, lock free %v",
				within, left, t.dir != 0, t.lock != 0)
		}
		pause(alive)
	}
}

// pause waits pollEvery: in ppoll on the pidfds of live processes, so an
// exit ends it early, or in nanosleep when there are none.
func pause(alive []unix.PollFd) {
	ts := pollEvery
	if len(alive) > 0 {
		_, _ = unix.Ppoll(alive, &ts, nil)
		return
	}
	_ = unix.Nanosleep(&ts, nil)
}

// finish reaps the owner, the guardian and whatever of the tree came back
// to this process, and checks that nothing is left: the guardian exits on
// its own once its teardown is done, and the agent's cgroup is gone.
func (r *killRun) finish() error {
	defer r.closeAll()
	_ = r.owner.wait() // killed: the error is the signal
	if err := r.guardian.reapWithin(waitLimit); err != nil {
		return fmt.Errorf("guardian: %w", err)
	}
	for _, p := range r.tree {
		if err := p.reapWithin(waitLimit); err != nil {
			return err
		}
	}
	if c := r.ready.Cgroup; c != "" {
		if _, err := os.Stat(c); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cgroup %s is still there after the cleanup (stat: %v)", c, err)
		}
	}
	return nil
}

// abort is the undo of a run that did not finish: it kills the owner,
// gives the guardian its chance to tear down, kills what is left and
// reaps everything.
func (r *killRun) abort() {
	defer r.closeAll()
	_ = r.owner.kill()
	_ = r.owner.wait()
	if r.guardian != nil && r.guardian.reapWithin(waitLimit) != nil {
		r.guardian.kill()
		_ = r.guardian.reapWithin(waitLimit)
	}
	for _, p := range r.tree {
		p.kill()
		_ = p.reapWithin(waitLimit)
	}
	if r.ready.Cgroup != "" {
		_ = os.Remove(r.ready.Cgroup)
	}
}

func (r *killRun) closeAll() {
	if r.guardian != nil {
		r.guardian.close()
		r.guardian = nil
	}
	for _, p := range r.tree {
		p.close()
	}
	r.tree = nil
	if r.lock != nil {
		r.lock.Close()
		r.lock = nil
	}
}

// waitPoliteTree waits until the agent's tree is complete: the agent, a
// worker in a process group of its own and an escapee in a session of its
// own that the guardian adopted, both past exec, and nothing else (the
// middle of the double fork has exited). It returns them in that order.
func waitPoliteTree(r wire.Ready, within time.Duration) ([]punix.Proc, error) {
	agent, err := punix.Stat(r.AgentPID)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	t := &punix.Tree{Leader: agent.Ref(), Root: r.GuardianPID}
	var ms, found []punix.Proc
	if !testproc.Until(within, func() bool {
		if ms, err = t.Members(); err != nil {
			return true
		}
		var a, w, e *punix.Proc
		for i := range ms {
			switch p := &ms[i]; {
			case p.Pid == r.AgentPID:
				a = p
			case p.PPid == r.AgentPID && p.Sid == r.AgentPID && p.Pgid == p.Pid && comm(p.Pid) == "sleep":
				w = p
			case p.PPid == r.GuardianPID && p.Sid == p.Pid && comm(p.Pid) == "sleep":
				e = p
			}
		}
		if a != nil && w != nil && e != nil && len(ms) == 3 {
			found = []punix.Proc{*a, *w, *e}
		}
		return found != nil
	}) {
		return nil, fmt.Errorf("the agent's tree is incomplete after %v: %d process(es) %v", within, len(ms), ms)
	}
	if err != nil {
		return nil, err
	}
	return found, nil
}

// lookPath finds a command the benchmark needs, or skips it.
func lookPath(b *testing.B, name string) string {
	b.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		b.Skipf("%s is not installed: %v", name, err)
	}
	return p
}

// tail returns the end of a log file for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	const keep = 4 << 10
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
