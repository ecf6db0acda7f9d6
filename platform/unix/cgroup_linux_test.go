package unix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

var cgroupSeq atomic.Int64

// newTestCgroup creates a cgroup v2 for the test, or skips it (fails it
// under CI=true) when there is no writable cgroup v2. When the test ends
// its processes are killed and it is removed.
func newTestCgroup(t *testing.T) *Cgroup {
	t.Helper()
	name := fmt.Sprintf("tether-unix-test-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	cg, err := NewCgroup(name)
	if err != nil {
		if errors.Is(err, ErrNoCgroup) {
			testproc.SkipOrFail(t, "no writable cgroup v2: %v", err)
		}
		t.Fatalf("NewCgroup(%q): %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(cg.Path); err != nil {
			return
		}
		_ = cg.Kill()
		var err error
		if !testproc.Until(waitLimit, func() bool {
			err = cg.Remove()
			return err == nil
		}) {
			t.Errorf("removing %s: %v", cg.Path, err)
		}
	})
	return cg
}

// cgroupOf returns the cgroup v2 directory /proc says pid is in.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	mount, root, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			if root != "/" {
				rel = strings.TrimPrefix(rel, root)
			}
			return filepath.Join(mount, rel)
		}
	}
	t.Fatalf("/proc/%d/cgroup has no cgroup v2 line: %q", pid, b)
	return ""
}

func sortedPids(t *testing.T, cg *Cgroup) []int {
	t.Helper()
	pids, err := cg.Pids()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pids)
	return pids
}

func TestCgroupLifecycle(t *testing.T) {
	cg := newTestCgroup(t)
	if fi, err := os.Stat(cg.Path); err != nil || !fi.IsDir() {
		t.Fatalf("cgroup directory %s: %v", cg.Path, err)
	}
	if own := cgroupOf(t, os.Getpid()); filepath.Dir(cg.Path) != own {
		t.Errorf("NewCgroup made %s, not below this process's cgroup %s", cg.Path, own)
	}
	if pids := sortedPids(t, cg); len(pids) != 0 {
		t.Errorf("new cgroup has processes %v", pids)
	}

	rp := newReadyPipe(t)
	pid, err := startSession(t, "leader", helperOpts{tag: "leader", args: []string{"child:sleep:worker"}, ready: rp}, cg)
	if err != nil {
		t.Fatalf("StartSession into %s: %v", cg.Path, err)
	}
	procs := rp.wait(t, "leader", "worker")
	leader, worker := procs["leader"], procs["worker"]
	if leader.Pid != pid {
		t.Fatalf("leader announced pid %d, StartSession returned %d", leader.Pid, pid)
	}
	for _, r := range []Ref{leader, worker} {
		if got := cgroupOf(t, r.Pid); got != cg.Path {
			t.Errorf("pid %d is in cgroup %s, want %s", r.Pid, got, cg.Path)
		}
	}
	if got, want := sortedPids(t, cg), slices.Sorted(slices.Values([]int{leader.Pid, worker.Pid})); !slices.Equal(got, want) {
		t.Errorf("Pids() = %v, want %v", got, want)
	}

	// A process in a child cgroup counts, and Remove takes the child
	// cgroup too.
	sub := filepath.Join(cg.Path, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "cgroup.procs"), []byte(strconv.Itoa(worker.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedPids(t, cg), slices.Sorted(slices.Values([]int{leader.Pid, worker.Pid})); !slices.Equal(got, want) {
		t.Errorf("Pids() with a child cgroup = %v, want %v", got, want)
	}

	// Remove refuses while processes remain.
	if err := cg.Remove(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Remove of a populated cgroup = %v, want EBUSY", err)
	}

	if err := cg.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	ws, ok := reapPid(t, leader)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("leader ended with %v (reaped %v), want killed by SIGKILL", ws, ok)
	}
	reapPid(t, worker) // adopted by the test process, as its parent died
	if Alive(worker) {
		t.Errorf("worker survived cgroup.kill")
	}
	testproc.Eventually(t, waitLimit, func() bool { return len(sortedPids(t, cg)) == 0 }, "timed out after %v waiting for the cgroup to empty", waitLimit)

	if err := cg.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, dir := range []string{sub, cg.Path} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove: %v", dir, err)
		}
	}
	if err := cg.Remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestOpenCgroup(t *testing.T) {
	cg := newTestCgroup(t)
	mount, _, err := cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenCgroup(cg.Path + "/")
	if err != nil || got.Path != cg.Path {
		t.Fatalf("OpenCgroup(%s/) = %+v, %v", cg.Path, got, err)
	}
	// It refers to the cgroup but cannot spawn into it.
	if _, err := startSession(t, "exit", helperOpts{args: []string{"0"}}, got); err == nil {
		t.Errorf("StartSession into an OpenCgroup cgroup succeeded")
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		dir,              // looks like a cgroup, is not one
		"/tmp",           // outside
		mount,            // the root itself
		mount + "/../..", // climbs out
		mount + "/" + filepath.Base(cg.Path) + "/../../../tmp",
		mount + "x/" + filepath.Base(cg.Path), // a sibling with a common prefix
		filepath.Base(cg.Path),                // relative
		"",
		filepath.Join(mount, "no-such-cgroup-here"), // inside but absent
	} {
		if c, err := OpenCgroup(path); err == nil {
			t.Errorf("OpenCgroup(%q) = %+v, want an error", path, c)
		}
	}
}

// Tree.Stop with a cgroup kills through cgroup.kill what ignores SIGTERM.
func TestTreeStopCgroup(t *testing.T) {
	cg := newTestCgroup(t)
	rp := newReadyPipe(t)
	if _, err := startSession(t, "leader", helperOpts{tag: "leader", args: []string{"pgrp:ignore-term:stubborn"}, ready: rp}, cg); err != nil {
		t.Fatal(err)
	}
	procs := rp.wait(t, "leader", "stubborn")
	// The cgroup alone names the tree.
	tree := &Tree{Cgroup: cg}
	rep, err := tree.Stop(100*time.Millisecond, waitLimit)
	if err != nil || !rep.Forced || rep.Terminated != 2 || rep.Killed < 1 {
		t.Fatalf("Stop = %+v, %v; want forced, 2 terminated, the stubborn one killed", rep, err)
	}
	for tag, r := range procs {
		reapPid(t, r)
		if Alive(r) {
			t.Errorf("%s survived", tag)
		}
	}
	if pids := sortedPids(t, cg); len(pids) != 0 {
		t.Errorf("cgroup still has %v", pids)
	}
}

// A member outside the cgroup, here one the tree names in Extra (a holder
// of its lock, say), is not reached by cgroup.kill: Stop must SIGKILL it
// itself, not merely stop it and report the tree alive.
func TestTreeStopCgroupMemberOutside(t *testing.T) {
	cg := newTestCgroup(t)
	rp := newReadyPipe(t)
	if _, err := startSession(t, "leader", helperOpts{tag: "inside", args: []string{"pgrp:ignore-term:stubborn"}, ready: rp}, cg); err != nil {
		t.Fatal(err)
	}
	startHelper(t, "ignore-term", helperOpts{tag: "outside", ready: rp, attr: &syscall.SysProcAttr{Setsid: true}})
	procs := rp.wait(t, "inside", "stubborn", "outside")
	outside := procs["outside"]
	if got := cgroupOf(t, outside.Pid); got == cg.Path {
		t.Fatalf("the outside helper is in the tree's cgroup")
	}

	tree := &Tree{Cgroup: cg, Extra: []Ref{outside}}
	rep, err := tree.Stop(100*time.Millisecond, time.Second)
	if err != nil {
		p, _ := Stat(outside.Pid)
		t.Errorf("Stop = %+v, %v; the member outside the cgroup is left in state %c", rep, err, p.State)
	}
	if Alive(outside) {
		t.Errorf("the member outside the cgroup survived Stop")
	}
	if !rep.Forced || rep.Killed < 2 {
		t.Errorf("Stop report %+v, want forced with the two stubborn members killed", rep)
	}
	for _, tag := range []string{"inside", "stubborn"} { // the other is exec's to wait for
		reapPid(t, procs[tag])
	}
}
