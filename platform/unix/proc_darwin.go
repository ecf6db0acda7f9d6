package unix

import (
	"errors"

	"golang.org/x/sys/unix"
)

// darwinStates maps p_stat of <sys/proc.h> to Linux-style state letters.
var darwinStates = [...]byte{1: 'I', 2: 'R', 3: 'S', 4: 'T', 5: 'Z'}

func fromKinfo(k *unix.KinfoProc) Proc {
	st := byte('?')
	if s := int(k.Proc.P_stat); s > 0 && s < len(darwinStates) {
		st = darwinStates[s]
	}
	pid := int(k.Proc.P_pid)
	sid, err := unix.Getsid(pid)
	if err != nil {
		sid = -1
	}
	tv := k.Proc.P_starttime
	return Proc{
		Pid:   pid,
		PPid:  int(k.Eproc.Ppid),
		Pgid:  int(k.Eproc.Pgid),
		Sid:   sid,
		State: st,
		Start: uint64(tv.Sec)*1_000_000 + uint64(tv.Usec),
	}
}

// Stat reads one process through sysctl(kern.proc.pid).
func Stat(pid int) (Proc, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
			return Proc{}, ErrNoProcess
		}
		return Proc{}, err
	}
	if k.Proc.P_pid != int32(pid) {
		return Proc{}, ErrNoProcess
	}
	return fromKinfo(k), nil
}

// Processes scans the process table through sysctl(kern.proc.all).
func Processes() ([]Proc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(ks))
	for i := range ks {
		if ks[i].Proc.P_pid > 0 {
			out = append(out, fromKinfo(&ks[i]))
		}
	}
	return out, nil
}

// FileHolders is not available on macOS without libproc; tether relies on
// the session scan there.
func FileHolders(path string) ([]Proc, error) { return nil, nil }

// DescendantProcs returns the processes below root from a scan of the
// process table.
func DescendantProcs(root int) ([]Proc, error) {
	procs, err := Processes()
	if err != nil {
		return nil, err
	}
	return Descendants(procs, root), nil
}

// walkOnce is DescendantProcs: one scan of the process table.
func walkOnce(root int) ([]Proc, error) { return DescendantProcs(root) }

// Environ is not available on macOS without libproc.
func Environ(pid int) ([]string, error) { return nil, errors.New("environ: not available on macOS") }
