package unix

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// startOwnChild starts a helper the way an Adopter's process must start
// its own children: through StartChild. It is killed and waited for when
// the test ends.
func startOwnChild(t *testing.T, role, tag string, rp *readyPipe, args ...string) *exec.Cmd {
	t.Helper()
	cmd := helperCommand(role, tag, args...)
	cmd.Stderr = os.Stderr
	rp.Pass(cmd)
	if err := StartCmd(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		ForgetChild(cmd.Process.Pid)
	})
	return cmd
}

// An Adopter stops and reaps what came to its process (a double-forked
// escapee that ignores SIGTERM, left by a leader that was then killed),
// reaps an orphan that exits on its own, and never touches a child the
// process started itself.
func TestAdopterStopsOrphans(t *testing.T) {
	if !isolated(t) {
		return
	}
	a, err := NewAdopter()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rp := newReadyPipe(t)
	own := startOwnChild(t, "sleep", "own", rp)
	leader := startOwnChild(t, "leader", "leader", rp, "escape:ignore-term:escapee", "escape:exit:gone")
	refs := rp.wait(t, "own", "leader", "escapee")
	if err := leader.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = leader.Wait()
	ForgetChild(leader.Process.Pid)

	testproc.Eventually(t, waitLimit, func() bool {
		procs, _ := a.Adopted()
		return slices.ContainsFunc(procs, func(p Proc) bool { return p.Ref() == refs["escapee"] })
	}, "the escapee %v was never adopted", refs["escapee"])
	begin := time.Now()
	rep, err := a.Stop(50*time.Millisecond, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v: %+v", time.Since(begin), rep)
	if rep.Killed < 1 || !rep.Forced {
		t.Errorf("report %+v: the escapee ignores SIGTERM and had to be killed", rep)
	}
	// Gone and reaped: not even a zombie is left.
	if _, err := Stat(refs["escapee"].Pid); err == nil {
		t.Errorf("the escapee %d is still there", refs["escapee"].Pid)
	}
	if a.anyAdopted() {
		t.Errorf("adopted children left: %v", childrenNow(t))
	}
	if !Alive(refs["own"]) {
		t.Error("the process's own child was stopped")
	}
	if err := own.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

func childrenNow(t *testing.T) []int {
	t.Helper()
	kids, err := childrenOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return kids
}

// A command started through StartCmd and run to its end keeps its exit
// status while an Adopter reaps on every SIGCHLD: the Adopter never takes it for an
// orphan. Run with os/exec alone, some of these would lose their status
// to the Adopter's wait ("no child processes").
func TestAdopterLeavesCountedChildren(t *testing.T) {
	if !isolated(t) {
		return
	}
	a, err := NewAdopter()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Side by side, so that the Adopter's scans meet the commands'
	// exits.
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 100 {
				err := runChild(exec.Command("/bin/sh", "-c", "exit 3"))
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
					errs <- fmt.Errorf("%v, want exit status 3", err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// runChild runs cmd to its end, counted as this process's own child.
func runChild(cmd *exec.Cmd) error {
	if err := StartCmd(cmd); err != nil {
		return err
	}
	defer ForgetChild(cmd.Process.Pid)
	return cmd.Wait()
}
