//go:build linux

package peers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// Helpers for a supervisor that is one process: supervisord and
// process-compose, which the harness spawns, and PM2's God Daemon, which
// it adopts.

// awaitExit waits up to waitLimit for cmd, asked to exit, and kills it
// then; done is its channel from harness.spawn.
func awaitExit(cmd *exec.Cmd, done chan struct{}) {
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
	}
}

// pssShared is the Pss per agent of a supervisor that is one process,
// pid: its Pss divided by the memory agents it runs.
func pssShared(h *harness, s supervisor, pid int) (float64, error) {
	p, err := pssMiB(pid)
	h.t.Logf("%s: Pss %.2f MiB for %d agents", s.name(), p, memAgents)
	return p / memAgents, err
}

// killSpawned SIGKILLs cmd and waits until it is reaped; done is its
// channel from harness.spawn.
func killSpawned(cmd *exec.Cmd, done chan struct{}) error {
	if err := cmd.Process.Kill(); err != nil {
		return err
	}
	<-done
	return nil
}

// waitAnswer polls check until it returns nil, cmd exits, or waitLimit
// passes; done is cmd's channel from harness.spawn.
func waitAnswer(cmd *exec.Cmd, done chan struct{}, check func() error) error {
	var err error
	exited := false
	if testproc.UntilEvery(waitLimit, pollEvery, func() bool {
		if err = check(); err == nil {
			return true
		}
		select {
		case <-done:
			exited = true
		default:
		}
		return exited
	}) && exited {
		return fmt.Errorf("%s exited: %v", filepath.Base(cmd.Path), cmd.ProcessState)
	}
	return err
}

// settler is a supervisor that takes a start of an agent again only some
// time after its tree is gone.
type settler interface {
	// settle returns once the supervisor takes a start of name again.
	settle(name string) error
}

// settle waits, where s needs it, until s takes a start of name again.
func settle(s supervisor, name string) error {
	if st, ok := s.(settler); ok {
		return st.settle(name)
	}
	return nil
}
