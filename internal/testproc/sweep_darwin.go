package testproc

import (
	"golang.org/x/sys/unix"
)

// processes reaps the zombie children, then reads the process table
// through sysctl(kern.proc.all).
func processes() ([]proc, error) {
	reapChildren()
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]proc, 0, len(ks))
	for i := range ks {
		k := &ks[i]
		pid := int(k.Proc.P_pid)
		if pid <= 0 {
			continue
		}
		sid, _ := unix.Getsid(pid)
		tv := k.Proc.P_starttime
		// p_stat of <sys/proc.h>: 5 is SZOMB.
		zombie := k.Proc.P_stat == 5
		state := byte('S')
		if zombie {
			state = 'Z'
		}
		out = append(out, proc{
			pid: pid, ppid: int(k.Eproc.Ppid), sid: sid, state: state,
			start:   uint64(tv.Sec)*1_000_000 + uint64(tv.Usec),
			zombie:  zombie,
			cmdline: unix.ByteSliceToString(k.Proc.P_comm[:]),
		})
	}
	return out, nil
}

// kill SIGKILLs p, a descendant of this process.
func (p proc) kill() { _ = unix.Kill(p.pid, unix.SIGKILL) }
