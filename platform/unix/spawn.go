//go:build unix

package unix

import (
	"os"
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
	// Extra are inherited as descriptors 3, 4, ...
	Extra []*os.File
	// Cgroup, when not nil, is the cgroup the child starts in
	// (clone3 CLONE_INTO_CGROUP): it never runs a single instruction
	// outside it. Linux only.
	Cgroup *Cgroup
}

// StartSession starts the process in a new session (setsid), so it has no
// controlling terminal and no signal meant for its parent's terminal or
// process group reaches it, and returns its pid. The caller must reap it
// (see Reaper).
func StartSession(s SpawnSpec) (int, error) {
	attr := &syscall.SysProcAttr{Setsid: true}
	if err := s.Cgroup.apply(attr); err != nil {
		return 0, err
	}
	files := append([]*os.File{s.Stdin, s.Stdout, s.Stderr}, s.Extra...)
	p, err := os.StartProcess(s.Path, s.Argv, &os.ProcAttr{Dir: s.Dir, Env: s.Env, Files: files, Sys: attr})
	if err != nil {
		return 0, err
	}
	pid := p.Pid
	// Release drops os.Process's own handle; the Reaper collects the
	// status by pid.
	_ = p.Release()
	return pid, nil
}
