//go:build unix

package unix

import (
	"os"
	"runtime"
	"syscall"
)

// SpawnSpec describes a process to start in a session of its own.
type SpawnSpec struct {
	Path   string
	Argv   []string
	Dir    string
	Env    []string
	Stdin  *os.File
	Stdout *os.File
	Stderr *os.File
	// Extra are inherited as descriptors FirstExtraFD, FirstExtraFD+1,
	// ...; a nil entry leaves its descriptor closed.
	Extra []*os.File
	// Cgroup, when not nil, is the cgroup the child starts in
	// (clone3 CLONE_INTO_CGROUP): it never runs a single instruction
	// outside it. Linux only.
	Cgroup *Cgroup
}

// FirstExtraFD is the descriptor the first of SpawnSpec.Extra becomes.
const FirstExtraFD = 3

// closedFD in ProcAttr.Files closes that descriptor in the child (-1 as
// syscall.ForkExec reads it).
const closedFD = ^uintptr(0)

// StartSession starts the process in a new session (setsid), so it has no
// controlling terminal and no signal meant for its parent's terminal or
// process group reaches it, and returns its pid. The caller must reap it
// (see Reaper).
//
// It uses syscall.ForkExec rather than os.StartProcess: the process is
// reaped by pid, so os.Process would add nothing but, on the first spawn
// of a process, a probe for pidfd support that costs a fork of its own.
func StartSession(s SpawnSpec) (int, error) {
	attr := &syscall.SysProcAttr{Setsid: true}
	if err := s.Cgroup.apply(attr); err != nil {
		return 0, err
	}
	files := append([]*os.File{s.Stdin, s.Stdout, s.Stderr}, s.Extra...)
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = closedFD
		if f != nil {
			fds[i] = f.Fd()
		}
	}
	pid, err := syscall.ForkExec(s.Path, s.Argv, &syscall.ProcAttr{Dir: s.Dir, Env: s.Env, Files: fds, Sys: attr})
	runtime.KeepAlive(files)
	if err != nil {
		return 0, &os.PathError{Op: "fork/exec", Path: s.Path, Err: err}
	}
	return pid, nil
}
