//go:build unix

package testproc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func pass(cmd *exec.Cmd, w *os.File) {
	cmd.ExtraFiles, cmd.Env = inherit(w, cmd.ExtraFiles, cmd.Environ())
}

// Inherit returns files and env with the pipe added, for a start that is
// not os/exec's and takes descriptors 3, 4, ... as a list: the pipe is
// descriptor 3+len(files) of the child.
func (rp *Ready) Inherit(files []*os.File, env []string) ([]*os.File, []string) {
	return inherit(rp.w, files, env)
}

func inherit(w *os.File, files []*os.File, env []string) ([]*os.File, []string) {
	fd := 3 + len(files)
	return append(files, w), withReady(env, strconv.Itoa(fd))
}

// adopt takes the inherited descriptor fd, closed on exec: a child gets
// the pipe when it is passed on, and not otherwise.
func adopt(fd uintptr) *os.File {
	syscall.CloseOnExec(int(fd))
	return os.NewFile(fd, "ready")
}
