//go:build unix

package guardian

import (
	"os"
	"os/exec"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

// tetherEnd is the guardian's end of the tether as the owner holds it
// until the guardian has started.
type tetherEnd = *os.File

// tetherPair returns the two ends of a socket pair. Both are
// close-on-exec from birth, so no other child spawned concurrently can
// inherit them (I6); os/exec dups the guardian's end to descriptor 3 for
// that one child only.
func tetherPair() (*os.File, tetherEnd, error) { return punix.SocketPair() }

func guardianCommand(exe string, end tetherEnd) *exec.Cmd {
	return &exec.Cmd{
		Path:       exe,
		Args:       []string{exe, "guardian"},
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: []*os.File{end},
		// Its own session: signals for the owner's terminal or process
		// group never reach it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
}

// startGuardian starts the guardian as a child this process counts as its
// own (see punix.StartChild): an owner that adopts orphans as a child
// subreaper never takes a guardian for one.
func startGuardian(cmd *exec.Cmd) error {
	_, err := punix.StartChild(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	return err
}

// guardianReaped ends the count startGuardian began.
func guardianReaped(pid int) { punix.ForgetChild(pid) }
