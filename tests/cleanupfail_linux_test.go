package tests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

const freezerRoot = "/sys/fs/cgroup/freezer"

// freezer is a cgroup v1 freezer made for one test. A frozen process
// cannot die, not even of SIGKILL, until it is thawed: a real, harmless
// way to make a tree impossible to confirm dead.
type freezer struct {
	t   *testing.T
	dir string
}

// newFreezer creates the cgroup; the test's end thaws it, moves whatever
// is left in it back to the root and removes it.
func newFreezer(t *testing.T) *freezer {
	t.Helper()
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "running as uid %d: a freezer cgroup needs root", os.Geteuid())
	}
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		testproc.SkipOrFail(t, "no cgroup v1 freezer: %v", err)
	}
	dir := filepath.Join(freezerRoot, fmt.Sprintf("tether-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		testproc.SkipOrFail(t, "cannot create a freezer cgroup: %v", err)
	}
	f := &freezer{t: t, dir: dir}
	t.Cleanup(func() {
		_ = f.write("freezer.state", "THAWED")
		var err error
		if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
			err = os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return true
			}
			for _, pid := range f.pids() {
				_ = os.WriteFile(filepath.Join(freezerRoot, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			}
			return false
		}) {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return f
}

func (f *freezer) write(file, value string) error {
	return os.WriteFile(filepath.Join(f.dir, file), []byte(value), 0)
}

func (f *freezer) pids() []int {
	b, _ := os.ReadFile(filepath.Join(f.dir, "cgroup.procs"))
	var out []int
	for _, l := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(l); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// freeze puts pid in the cgroup and waits until it is frozen.
func (f *freezer) freeze(pid int) {
	f.t.Helper()
	if err := f.write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		f.t.Fatal(err)
	}
	if err := f.write("freezer.state", "FROZEN"); err != nil {
		f.t.Fatal(err)
	}
	var b []byte
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		b, _ = os.ReadFile(filepath.Join(f.dir, "freezer.state"))
		return string(bytes.TrimSpace(b)) == "FROZEN"
	}) {
		f.t.Fatalf("%s: state %q, never FROZEN", f.dir, b)
	}
}

func (f *freezer) thaw() {
	f.t.Helper()
	if err := f.write("freezer.state", "THAWED"); err != nil {
		f.t.Fatal(err)
	}
}

// frozenChild runs agent x (identity x@relay), a shell whose child
// sleeps, in the default profile of w, and freezes the child in fz: the
// one process of its tree that will not die. It returns the service and
// the child's pid.
func frozenChild(t *testing.T, fz *freezer, w *world, m string) (*service, int) {
	t.Helper()
	w.writeConfig(fmt.Sprintf(`agents:
  - id: x
    identity: x@relay
    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]
    autostart: true
    stop_timeout: 200ms
`, m))
	svc := w.startService("default")
	// Runs before the service's cleanup, whose stop could never finish
	// with a frozen member.
	t.Cleanup(func() { _ = fz.write("freezer.state", "THAWED") })
	x := w.waitState("default", "x", api.StateRunning)
	var child int
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		procs, _ := punix.Processes()
		for _, p := range procs {
			if p.PPid == x.PID && !p.Zombie() {
				child = p.Pid
			}
		}
		return child != 0
	}) {
		t.Fatalf("agent %d never started its child", x.PID)
	}
	fz.freeze(child)
	return svc, child
}

// A stop whose tree cannot be confirmed dead exits 5, and the agent shows
// cleanup_failed with that code (I3); the guardian keeps the lock and
// retries, and once the process can die the agent reaches stopped.
func TestStopCleanupFailedExits5(t *testing.T) {
	fz := newFreezer(t)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	_, child := frozenChild(t, fz, w, m)

	begin := time.Now()
	r := w.run(60*time.Second, "stop", "x")
	if r.code != 5 || !strings.Contains(r.stderr, "tether stop x:") {
		t.Fatalf("stop with a frozen member: exit %d (want 5)\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("stop exited 5 after %v: %s", time.Since(begin), strings.TrimSpace(r.stderr))
	row := w.status("default")["x"]
	if row.State != api.StateCleanupFailed || row.Error == nil || row.Error.Code != api.CodeCleanupFailed {
		t.Fatalf("after the failed stop: %+v (error %+v), want state and error code cleanup_failed", row, row.Error)
	}
	if !strings.Contains(row.Error.Message, strconv.Itoa(child)) {
		t.Errorf("the cleanup error does not name the pid left, %d: %s", child, row.Error.Message)
	}
	// A client learns what is left without reading the message.
	if len(row.Error.Left) != 1 || row.Error.Left[0].PID != child || row.Error.Left[0].State == "" {
		t.Errorf("the cleanup error's left = %+v, want pid %d with its state", row.Error.Left, child)
	}
	// The identity stays held while its tree may live (I1).
	if held := w.heldLocks(); len(held) != 1 {
		t.Errorf("held locks with a tree not confirmed dead: %v", held)
	}
	if err := unix.Kill(child, 0); err != nil {
		t.Fatalf("the frozen child %d is gone already: %v", child, err)
	}

	fz.thaw()
	row = w.waitState("default", "x", api.StateStopped)
	t.Logf("stopped %v after the stop began (thawed at once); error: %+v", time.Since(begin), row.Error)
	w.waitOwnerGone("default", m, time.Now(), 5*time.Second)
	if err := unix.Kill(child, 0); err == nil {
		if p, err := punix.Stat(child); err == nil && !p.Zombie() {
			t.Errorf("child %d still lives after the stop", child)
		}
	}
}

// A process that could not be killed and dies at last (thawed) is seen
// at once: the row leaves cleanup_failed within about a second of the
// thaw, not at the guardian's next retry (4 s after its second one), and
// the service's log says when the cleanup failure began and when it
// ended, once each, whatever the retries between.
func TestCleanupFailureEndsAtOnce(t *testing.T) {
	fz := newFreezer(t)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	svc, _ := frozenChild(t, fz, w, m)
	if r := w.run(60*time.Second, "stop", "x"); r.code != 5 {
		t.Fatalf("stop with a frozen member: exit %d (want 5)\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Each retry's report renews the row's since: wait for two retries
	// (1 s and 2 s after the first report), so that the next is 4 s away.
	w.waitCleanupRetries(t, "x", 2)
	thawed := time.Now()
	fz.thaw()
	row := w.waitState("default", "x", api.StateStopped)
	took := time.Since(thawed)
	t.Logf("stopped %v after the thaw (error %+v)", took, row.Error)
	if took > 1500*time.Millisecond {
		t.Errorf("the row left cleanup_failed %v after the thaw, want within about a second", took)
	}

	log := svc.output()
	for _, line := range []string{`agent "x": cleanup failed: `, `agent "x": the cleanup failure is over`} {
		if n := strings.Count(log, line); n != 1 {
			t.Errorf("%d lines with %q in the service's log, want 1:\n%s", n, line, log)
		}
	}
}

// waitCleanupRetries waits for n retries of agent id's failed cleanup in
// the default profile, each seen as a new since of its row, which stays
// cleanup_failed throughout.
func (w *world) waitCleanupRetries(t *testing.T, id string, n int) {
	t.Helper()
	row := w.status("default")[id]
	for range n {
		since := row.Since
		if !testproc.UntilEvery(15*time.Second, 10*time.Millisecond, func() bool {
			row = w.status("default")[id]
			return !row.Since.Equal(since)
		}) {
			t.Fatalf("no retry of the cleanup within 15 s: %+v %+v", row, row.Error)
		}
		if row.State != api.StateCleanupFailed {
			t.Fatalf("before the thaw: %s %+v, want cleanup_failed", row.State, row.Error)
		}
	}
}
