//go:build unix

package platform_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/tether-dev/tether/platform"
)

// TestTreeUsage: a process in a session of its own is its tree: one
// process, some memory, measured over its processes; once it is gone,
// nothing.
func TestTreeUsage(t *testing.T) {
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to run: %v", err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	leader, err := platform.RefOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	tree := platform.Tree{Leader: leader}
	u, err := platform.TreeUsage(tree)
	if err != nil || u.Procs != 1 || u.Memory == 0 || u.Source != platform.UsageProcesses {
		t.Errorf("TreeUsage of a sleep = %+v, %v; want one process, some memory, by processes", u, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	waited = true
	if u, err := platform.TreeUsage(tree); err != nil || u != (platform.Usage{Source: platform.UsageProcesses}) {
		t.Errorf("TreeUsage of a tree that is gone = %+v, %v; want nothing", u, err)
	}
}
