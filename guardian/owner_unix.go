//go:build unix

package guardian

import (
	"io"
	"os"
	"os/exec"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

// guardianCommand returns the command that starts a guardian, tied to this
// process by a new tether: a socket pair whose ends are both close-on-exec
// from birth, so no other child spawned concurrently can inherit them
// (I6); os/exec dups the guardian's end to descriptor 3 for that one
// child only. It returns this process's end, and the guardian's, which
// the caller closes once the guardian has started or failed to.
func guardianCommand(exe string) (cmd *exec.Cmd, conn *os.File, end io.Closer, err error) {
	conn, guardEnd, err := punix.SocketPair()
	if err != nil {
		return nil, nil, nil, err
	}
	// Descriptor 4, where there is one: the memory where this owner's
	// guardians note when they saw it die (deathclock_linux.go).
	extra := []*os.File{guardEnd}
	if f := ownerDeathFile(); f != nil {
		extra = append(extra, f)
	}
	return &exec.Cmd{
		Path:       exe,
		Args:       []string{exe, "guardian"},
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: extra,
		// Its own session: signals for the owner's terminal or process
		// group never reach it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}, conn, guardEnd, nil
}
