package unix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

const freezerRoot = "/sys/fs/cgroup/freezer"

// requireFreezer skips the test (fails it under CI=true) unless this process
// can create cgroup v1 freezer groups.
func requireFreezer(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "the cgroup v1 freezer test needs root")
	}
	var st syscall.Statfs_t
	const cgroupSuperMagic = 0x27e0eb
	if err := syscall.Statfs(freezerRoot, &st); err != nil || st.Type != cgroupSuperMagic {
		testproc.SkipOrFail(t, "no cgroup v1 freezer hierarchy at %s (statfs: %v)", freezerRoot, err)
	}
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		testproc.SkipOrFail(t, "no cgroup v1 freezer hierarchy at %s: %v", freezerRoot, err)
	}
}

func init() { afterIsolated = append(afterIsolated, thawLeftovers) }

// thawLeftovers thaws, kills and removes the freezer groups that an
// isolated test process left behind, which it does only when it was killed
// before its cleanups ran: a frozen process would outlive the tests.
func thawLeftovers(t *testing.T, pid int) {
	dirs, _ := filepath.Glob(filepath.Join(freezerRoot, fmt.Sprintf("tether-unix-test-%d-*", pid)))
	for _, dir := range dirs {
		t.Errorf("freezer group %s outlived its test process; thawing and killing its processes", dir)
		_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0)
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for f := range strings.FieldsSeq(string(b)) {
			// Orphans of the dead test process are the test's own now
			// and stay unreaped until TestMain: their pids are stable.
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		testproc.Until(waitLimit, func() bool { return syscall.Rmdir(dir) == nil })
	}
}

// freezer is a cgroup v1 freezer group of the test's own.
type freezer struct{ dir string }

// newFreezer creates a freezer group, removed when the test ends once the
// processes moved into it are gone.
func newFreezer(t *testing.T) *freezer {
	t.Helper()
	dir := filepath.Join(freezerRoot, fmt.Sprintf("tether-unix-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		testproc.SkipOrFail(t, "cannot create a freezer group: %v", err)
	}
	t.Cleanup(func() {
		var err error
		// Busy until the processes moved into it are gone.
		testproc.Until(waitLimit, func() bool {
			err = syscall.Rmdir(dir)
			return !errors.Is(err, syscall.EBUSY)
		})
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("removing freezer group %s: %v", dir, err)
		}
	})
	return &freezer{dir: dir}
}

func (f *freezer) add(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		t.Fatalf("moving %d into %s: %v", pid, f.dir, err)
	}
}

// set writes state (FROZEN or THAWED) and waits until the kernel reports it.
func (f *freezer) set(t testing.TB, state string) {
	t.Helper()
	file := filepath.Join(f.dir, "freezer.state")
	if err := os.WriteFile(file, []byte(state), 0); err != nil {
		t.Fatalf("writing %s to %s: %v", state, file, err)
	}
	testproc.Eventually(t, waitLimit, func() bool {
		b, err := os.ReadFile(file)
		return err == nil && strings.TrimSpace(string(b)) == state
	}, "timed out after %v waiting for %s to be %s", waitLimit, f.dir, state)
}

// A frozen process cannot die, even of SIGKILL: Stop must not claim the
// tree is gone, but say which process is left. Once thawed, it dies and a
// second Stop succeeds.
func TestTreeStopFrozen(t *testing.T) {
	requireFreezer(t)
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	fz := newFreezer(t)
	tt := startTree(t, r, "pgrp:sleep:worker")
	worker := tt.procs["worker"]
	fz.add(t, worker.Pid)
	t.Cleanup(func() { fz.set(t, "THAWED") }) // before the tree is killed
	fz.set(t, "FROZEN")

	rep, err := tt.tree.Stop(300*time.Millisecond, 200*time.Millisecond)
	var ae *TreeAliveError
	if !errors.As(err, &ae) {
		t.Fatalf("Stop of a tree with a frozen member = %+v, %v; want a *TreeAliveError", rep, err)
	}
	if len(ae.Left) != 1 || ae.Left[0].Pid != worker.Pid || ae.Left[0].Zombie() {
		t.Errorf("TreeAliveError.Left = %+v, want the frozen worker %d", ae.Left, worker.Pid)
	}
	// The leader dies of SIGTERM, unless it is too slow for the timeout.
	if !rep.Forced || rep.Killed < 1 || rep.Terminated != 2 {
		t.Errorf("Stop report %+v, want 2 terminated, the worker killed, forced", rep)
	}
	if !Alive(worker) {
		t.Fatalf("the frozen worker died")
	}

	fz.set(t, "THAWED")
	rep, err = tt.tree.Stop(waitLimit, waitLimit)
	if err != nil {
		t.Fatalf("second Stop after thawing = %+v, %v", rep, err)
	}
	tt.checkGone(t, syscall.SIGTERM)
}

// While a member dies, its children move to the subreaper (Root). A walk of
// Root's children lists that reads Root's list before the move and the dying
// member's list after it sees neither copy. Members must not lose a live
// process that way, nor Stop call the tree empty while it runs.
func TestTreeMembersDuringReparent(t *testing.T) {
	if !subreaper {
		t.Skip("no child subreaper")
	}
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	misses := 0
	// A round catches the race about one time in three.
	for round := 0; round < 20 && misses == 0; round++ {
		tt := startTree(t, r, "child:sleep:w1", "child:sleep:w2", "child:sleep:w3")
		tree := &Tree{Leader: tt.procs["leader"], Root: os.Getpid(), RootSubreaper: true}
		workers := []Ref{tt.procs["w1"], tt.procs["w2"], tt.procs["w3"]}

		var stop atomic.Bool
		var wg sync.WaitGroup
		missed := make(chan []int, 2)
		for range 2 {
			wg.Go(func() {
				var lost []int
				for !stop.Load() {
					ms, err := tree.Members()
					if err != nil {
						t.Error(err)
						return
					}
					for _, w := range workers {
						if !slices.ContainsFunc(ms, func(p Proc) bool { return p.Pid == w.Pid }) {
							lost = append(lost, w.Pid)
						}
					}
				}
				missed <- lost
			})
		}
		h := openHandle(t, tt.procs["leader"])
		if err := h.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, waitLimit, func() bool {
			for _, w := range workers {
				if p, err := Stat(w.Pid); err != nil || p.PPid != os.Getpid() {
					return false
				}
			}
			return true
		}, "timed out after %v waiting for the workers to be adopted", waitLimit)
		stop.Store(true)
		wg.Wait()
		close(missed)
		for lost := range missed {
			for _, pid := range lost {
				t.Errorf("round %d: Members() missed the live worker %d while its parent died", round, pid)
				misses++
			}
		}
		if _, err := tt.tree.Stop(0, waitLimit); err != nil {
			t.Fatal(err)
		}
	}
}
