//go:build windows

package platform

import (
	"os"
	"os/exec"

	pwin "github.com/tether-dev/tether/platform/windows"
)

type ref = pwin.Ref

func self() Ref {
	r, err := pwin.RefOf(os.Getpid())
	if err != nil {
		return Ref{Pid: os.Getpid()}
	}
	return r
}

func alive(r Ref) bool { return pwin.Alive(r) }

func refOf(pid int) (Ref, error) { return pwin.RefOf(pid) }

// startChild and waitChild: no process here adopts orphans.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func waitChild(cmd *exec.Cmd) error { return cmd.Wait() }
