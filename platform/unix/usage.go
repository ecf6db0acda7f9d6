//go:build unix

package unix

import "time"

// Usage is what a process tree costs at one moment.
type Usage struct {
	// CPU is the processor time, user and system, that the tree has
	// used: with Cgroup, the cgroup's, which counts every process that
	// was ever in it; otherwise that of its live processes and of the
	// children they waited for.
	CPU time.Duration
	// Memory is the memory the tree holds, in bytes: with Cgroup the
	// cgroup's memory.current (its pages, page cache included);
	// otherwise the sum over its processes of their proportional share
	// of resident memory (Pss) on Linux, their resident size elsewhere.
	Memory uint64
	// Procs is how many live processes the tree has.
	Procs int
	// Cgroup says CPU and Memory are the cgroup's own accounting.
	Cgroup bool
}

// Usage measures the tree, when asked: nothing keeps or samples it. It
// reads the cgroup's accounting where the cgroup has both memory.current
// and cpu.stat (a cgroup v2 with the memory controller enabled), and
// otherwise sums over the tree's members; a member that exits meanwhile
// is left out.
func (t *Tree) Usage() (Usage, error) {
	ms, err := t.Members()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Procs: len(ms)}
	if t.Cgroup != nil {
		if cpu, mem, err := cgroupUsage(t.Cgroup.Path); err == nil {
			u.CPU, u.Memory, u.Cgroup = cpu, mem, true
			return u, nil
		}
	}
	for _, p := range ms {
		cpu, mem, err := procUsage(p)
		if err != nil {
			continue // it exited, or its PID now names another process
		}
		u.CPU += cpu
		u.Memory += mem
	}
	return u, nil
}
