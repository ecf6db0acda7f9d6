//go:build unix

package platform

import punix "github.com/tether-dev/tether/platform/unix"

func treeUsage(t Tree) (Usage, error) {
	tr := punix.Tree{Leader: t.Leader, Root: t.Root, RootSubreaper: t.RootSubreaper}
	if t.Cgroup != "" {
		// A cgroup that is gone by now has no accounting to read.
		tr.Cgroup, _ = punix.OpenCgroup(t.Cgroup)
	}
	u, err := tr.Usage()
	if err != nil {
		return Usage{}, err
	}
	src := UsageProcesses
	if u.Cgroup {
		src = UsageCgroup
	}
	return Usage{CPU: u.CPU, Memory: u.Memory, Procs: u.Procs, Source: src}, nil
}
