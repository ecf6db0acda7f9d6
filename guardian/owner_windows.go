//go:build windows

package guardian

import (
	"os"
	"os/exec"
	"sync"
	"syscall"

	pwin "github.com/tether-dev/tether/platform/windows"
	"golang.org/x/sys/windows"
)

// tetherEnd is the guardian's end of the tether as the owner holds it
// until the guardian has started.
type tetherEnd = *pwin.ChildHandle

// tetherPair returns the two ends of a duplex pipe: this process's end is
// not inheritable, and the guardian's end is inherited by the guardian
// alone, named in its start's handle list, so no other child (another
// guardian started at the same moment, or any agent) gets it (I6).
func tetherPair() (*os.File, tetherEnd, error) { return pwin.DuplexPair("tether-guardian") }

var selfProc = sync.OnceValue(func() pwin.Ref {
	r, err := pwin.RefOf(os.Getpid())
	if err != nil {
		return pwin.Ref{Pid: os.Getpid()}
	}
	return r
})

func guardianCommand(exe string, end tetherEnd) *exec.Cmd {
	args := guardianArgs{tether: end.Value(), owner: selfProc()}
	return &exec.Cmd{
		Path: exe,
		Args: append([]string{exe, "guardian"}, args.list()...),
		// os/exec adds SYSTEMROOT, which every Windows program needs.
		Env: []string{"GOMAXPROCS=1"},
		SysProcAttr: &syscall.SysProcAttr{
			AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(end.Value())},
			// Its own process group, so that the owner's console
			// events never reach it, and a console of its own without
			// a window, which the agent shares: a CTRL_BREAK to the
			// agent's group needs one.
			CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		},
	}
}

// startGuardian starts the guardian. Windows has no orphans to tell it
// from: the job object ends a dead guardian's tree.
func startGuardian(cmd *exec.Cmd) error { return cmd.Start() }

// guardianReaped has nothing to undo on Windows.
func guardianReaped(int) {}
