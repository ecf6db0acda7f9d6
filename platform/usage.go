package platform

import "time"

// Tree names a running agent's process tree as its guardian describes it
// when the agent has started: what the system needs to find the tree's
// processes again, or its container's own accounting.
type Tree struct {
	// Leader is the agent's first process (its PID alone when it was
	// gone already). On Unix it leads the session the tree's processes
	// share, whose id is its PID; once it is gone the session's members
	// still count, but not those of another process that has its PID.
	Leader Ref
	// Root is the guardian (Unix). With RootSubreaper, a child
	// subreaper (Linux), every descendant of it belongs to the tree,
	// even one that left the session.
	Root          int
	RootSubreaper bool
	// Cgroup is the cgroup v2 directory that holds the tree (Linux, when
	// the guardian has one).
	Cgroup string
	// Job is the name of the job object that holds the tree (Windows).
	Job string
}

// UsageSource says how a Usage was measured.
type UsageSource string

// The usage sources.
const (
	// UsageCgroup: the cgroup's own accounting (cpu.stat, memory.current),
	// where the memory controller is enabled for it.
	UsageCgroup UsageSource = "cgroup"
	// UsageProcesses: the sum over the tree's live processes (Linux:
	// /proc, with the CPU time of the children they waited for and
	// their proportional set size; macOS: proc_pidinfo's CPU time and
	// resident size).
	UsageProcesses UsageSource = "processes"
	// UsageJob: the job object's accounting (CPU time of every process
	// that ran in it) and its live processes' working sets.
	UsageJob UsageSource = "job"
)

// Usage is what a process tree costs at one moment.
type Usage struct {
	// CPU is the processor time, user and system, the tree has used
	// since it started (with UsageProcesses, that of its live processes
	// and, on Linux, of the children they waited for).
	CPU time.Duration
	// Memory is the memory the tree holds now, in bytes.
	Memory uint64
	// Procs is how many live processes it has.
	Procs  int
	Source UsageSource
}

// TreeUsage measures t when called: nothing samples a tree in the
// background. A process of the tree that exits meanwhile is left out.
func TreeUsage(t Tree) (Usage, error) { return treeUsage(t) }
