package testproc

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// pass lists the pipe's handle among those cmd inherits: os.Pipe makes
// inheritable handles, and os/exec gives a child only the handles it
// lists (ExtraFiles does not exist on Windows).
func pass(cmd *exec.Cmd, w *os.File) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	h := syscall.Handle(w.Fd())
	cmd.SysProcAttr.AdditionalInheritedHandles = append(cmd.SysProcAttr.AdditionalInheritedHandles, h)
	cmd.Env = withReady(cmd.Environ(), strconv.FormatUint(uint64(h), 10))
}

// adopt takes the inherited handle h.
func adopt(h uintptr) *os.File { return os.NewFile(h, "ready") }
