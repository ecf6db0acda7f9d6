//go:build !unix && !windows

package platform

import (
	"os"
	"os/exec"
)

type ref struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func self() Ref { return Ref{Pid: os.Getpid()} }

// alive cannot tell, so it says no.
func alive(Ref) bool { return false }

func refOf(int) (Ref, error) { return Ref{}, unsupported("processes") }

// startChild and waitChild: no process here adopts orphans.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func waitChild(cmd *exec.Cmd) error { return cmd.Wait() }
