//go:build unix

package guardian

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

// guardianCommand returns the command that starts a guardian, tied to this
// process by a new tether: a socket pair whose ends are both close-on-exec
// from birth, so no other child spawned concurrently can inherit them
// (I6); os/exec dups the guardian's end to descriptor 3 for that one
// child only. It returns this process's end, and the guardian's, which
// the caller closes once the guardian has started or failed to.
func guardianCommand(prog Program) (cmd *exec.Cmd, conn *os.File, end io.Closer, err error) {
	conn, guardEnd, err := punix.SocketPair()
	if err != nil {
		return nil, nil, nil, err
	}
	// Descriptor 4, where there is one: the clock where this owner's
	// guardians note when they saw it die (see deathClockFD).
	extra := []*os.File{guardEnd}
	if f := ownerDeathFile(); f != nil {
		extra = append(extra, f)
	}
	return &exec.Cmd{
		Path:       prog.Path,
		Args:       prog.argv(),
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: extra,
		// Its own session: signals for the owner's terminal or process
		// group never reach it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}, conn, guardEnd, nil
}

// ownerDeathFile is this process's shared clock, made once and handed to
// every guardian it starts; nil where it could not be made (the
// guardians then count from their own EOF).
var ownerDeathFile = sync.OnceValue(func() *os.File {
	f, err := punix.NewSharedClockFile(deathClockName)
	if err != nil {
		return nil
	}
	return f
})

// startGuardian starts the guardian as a child this process counts as its
// own (see punix.StartChild): an owner that adopts orphans as a child
// subreaper never takes a guardian for one.
func startGuardian(cmd *exec.Cmd) error { return punix.StartCmd(cmd) }

// guardianReaped ends the count startGuardian began.
func guardianReaped(pid int) { punix.ForgetChild(pid) }

// claimChild counts pid, a child this process did not start through
// startGuardian (it did before an execve), as its own.
func claimChild(pid int) {
	_, _ = punix.StartChild(func() (int, error) { return pid, nil })
}
