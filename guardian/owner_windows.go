//go:build windows

package guardian

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/tether-dev/tether/platform"
	pwin "github.com/tether-dev/tether/platform/windows"
	"golang.org/x/sys/windows"
)

// selfProc is this process's reference, which every guardian it starts
// watches.
var selfProc = sync.OnceValue(platform.Self)

// guardianCommand returns the command that starts a guardian, tied to this
// process by a new tether: a duplex pipe whose end here is not
// inheritable, and whose other end is inherited by the guardian alone,
// named in its start's handle list, so no other child (another guardian
// started at the same moment, or any agent) gets it (I6). It returns this
// process's end, and the guardian's, which the caller closes once the
// guardian has started or failed to.
func guardianCommand(prog Program) (cmd *exec.Cmd, conn *os.File, end io.Closer, err error) {
	conn, guardEnd, err := pwin.DuplexPair("tether-guardian")
	if err != nil {
		return nil, nil, nil, err
	}
	args := guardianArgs{tether: guardEnd.Value(), owner: selfProc()}
	return &exec.Cmd{
		Path: prog.Path,
		Args: append(prog.argv(), args.list()...),
		// os/exec adds SYSTEMROOT, which every Windows program needs.
		Env: []string{"GOMAXPROCS=1"},
		SysProcAttr: &syscall.SysProcAttr{
			AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(guardEnd.Value())},
			// Its own process group, so that the owner's console
			// events never reach it, and a console of its own without
			// a window, which the agent shares: a CTRL_BREAK to the
			// agent's group needs one.
			CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW,
		},
	}, conn, guardEnd, nil
}

// startGuardian starts the guardian. Windows has no orphans to tell it
// from: the job object ends a dead guardian's tree.
func startGuardian(cmd *exec.Cmd) error { return cmd.Start() }

// guardianReaped has nothing to undo on Windows.
func guardianReaped(int) {}

// claimChild has nothing to count on Windows.
func claimChild(int) {}
