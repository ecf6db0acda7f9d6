//go:build unix

package platform

import (
	"os"
	"os/exec"

	punix "github.com/tether-dev/tether/platform/unix"
)

type ref = punix.Ref

func self() Ref {
	p, err := punix.Stat(os.Getpid())
	if err != nil {
		return Ref{Pid: os.Getpid()}
	}
	return p.Ref()
}

func alive(r Ref) bool { return punix.Alive(r) }

func refOf(pid int) (Ref, error) {
	p, err := punix.Stat(pid)
	if err == nil && p.Zombie() {
		err = punix.ErrNoProcess
	}
	return p.Ref(), err
}

func startChild(cmd *exec.Cmd) error { return punix.StartCmd(cmd) }

func waitChild(cmd *exec.Cmd) error {
	defer punix.ForgetChild(cmd.Process.Pid)
	return cmd.Wait()
}
