package unix

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// usageOf measures a tree until its CPU time has passed min, and checks
// the figures a tree of a burning helper and its idle leader must show:
// two processes, the burner's memory and not much more, no more CPU time
// than the machine had since the tree started.
func usageOf(t *testing.T, tree *Tree, began time.Time) Usage {
	t.Helper()
	const min = 300 * time.Millisecond
	var u Usage
	var err error
	testproc.Eventually(t, waitLimit, func() bool {
		u, err = tree.Usage()
		return err == nil && u.CPU >= min
	}, "timed out after %v waiting for the tree's CPU time to pass %v", waitLimit, min)
	if limit := time.Since(began) * time.Duration(runtime.NumCPU()); u.CPU > limit {
		t.Errorf("CPU %v: more than the %v the machine's CPUs had since the tree started", u.CPU, limit)
	}
	if u.Procs != 2 {
		t.Errorf("Procs = %d, want 2 (the leader and its burner)", u.Procs)
	}
	if u.Memory < burnBytes || u.Memory > burnBytes+256<<20 {
		t.Errorf("Memory = %d MiB, want the burner's %d MiB and less than 256 MiB more", u.Memory>>20, burnBytes>>20)
	}
	return u
}

// gone checks that a tree whose processes were killed costs nothing.
func gone(t *testing.T, tree *Tree) {
	t.Helper()
	u, err := tree.Usage()
	if err != nil || u.Procs != 0 || u.CPU != 0 || u.Memory != 0 {
		t.Errorf("Usage of a tree that is gone = %+v, %v; want zero", u, err)
	}
}

// TestTreeUsage: a session whose leader starts a burner that writes 64
// MiB and spins costs that memory and CPU time, summed over its
// processes; once killed, it costs nothing.
func TestTreeUsage(t *testing.T) {
	rp := newReadyPipe(t)
	began := time.Now()
	if _, err := startSession(t, "leader", helperOpts{tag: "leader", args: []string{"child:burn:burner"}, ready: rp}, nil); err != nil {
		t.Fatal(err)
	}
	procs := rp.wait(t, "leader", "burner")
	tree := &Tree{Leader: procs["leader"]}
	if u := usageOf(t, tree, began); u.Cgroup {
		t.Errorf("a tree without a cgroup was measured by one: %+v", u)
	}
	killAndReap(t, procs["burner"])
	killAndReap(t, procs["leader"])
	gone(t, tree)
}

// TestTreeUsageCgroup: a tree in a cgroup is measured by the cgroup's
// accounting where it has memory.current, and over its processes where
// it does not (a cgroup v2 without the memory controller).
func TestTreeUsageCgroup(t *testing.T) {
	cg := newTestCgroup(t)
	rp := newReadyPipe(t)
	began := time.Now()
	if _, err := startSession(t, "leader", helperOpts{tag: "leader", args: []string{"child:burn:burner"}, ready: rp}, cg); err != nil {
		t.Fatal(err)
	}
	procs := rp.wait(t, "leader", "burner")
	tree := &Tree{Cgroup: cg}
	_, err := os.Stat(filepath.Join(cg.Path, "memory.current"))
	accounted := err == nil
	if u := usageOf(t, tree, began); u.Cgroup != accounted {
		t.Errorf("Cgroup = %v, want %v (memory.current: %v)", u.Cgroup, accounted, err)
	}
	t.Logf("cgroup accounting: %v", accounted)
	killAndReap(t, procs["burner"])
	killAndReap(t, procs["leader"])
	if !accounted {
		gone(t, tree)
	}
}

// TestCgroupUsageFiles: the cgroup's figures are read from memory.current
// and cpu.stat's usage_usec; without memory.current there are none.
func TestCgroupUsageFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
	if _, _, err := cgroupUsage(dir); err == nil {
		t.Errorf("cgroupUsage without memory.current succeeded")
	}
	write("memory.current", "123456789\n")
	cpu, mem, err := cgroupUsage(dir)
	if err != nil || cpu != 2500*time.Millisecond || mem != 123456789 {
		t.Errorf("cgroupUsage = %v, %d, %v; want 2.5s, 123456789", cpu, mem, err)
	}
	write("cpu.stat", "user_usec 2000000\n")
	if _, _, err := cgroupUsage(dir); err == nil {
		t.Errorf("cgroupUsage without usage_usec succeeded")
	}
}
