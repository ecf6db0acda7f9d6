package api

import "github.com/tether-dev/tether/platform"

// Usage is what an agent's process tree costs, measured by the service
// when a status asks for it (GET status?usage=1, see PathStatus and
// Client.StatusWithUsage), never in the background. An agent that does
// not run has a zero Usage.
type Usage struct {
	// CPUSeconds is the processor time, user and system, its tree has
	// used since the agent started. Measured over live processes (source
	// processes), it leaves out processes that ended without being
	// waited for by another of the tree.
	CPUSeconds float64 `json:"cpu_seconds"`
	// MemoryBytes is the memory its tree holds now: the cgroup's
	// memory.current, the sum of its processes' proportional set sizes
	// (Linux) or resident sizes (macOS), or of the working sets of its
	// job's processes (Windows).
	MemoryBytes uint64 `json:"memory_bytes"`
	// Procs is how many live processes its tree has.
	Procs int `json:"procs"`
	// Source says how it was measured; empty for an agent that does not
	// run.
	Source UsageSource `json:"source,omitempty"`
}

// UsageSource says how a Usage was measured: one of the UsageSource
// constants, which are the platform's.
type UsageSource = platform.UsageSource

// The usage sources.
const (
	// UsageCgroup: the agent's cgroup's own accounting (Linux, where its
	// cgroup has the memory controller).
	UsageCgroup = platform.UsageCgroup
	// UsageProcesses: the sum over the tree's live processes.
	UsageProcesses = platform.UsageProcesses
	// UsageJob: the agent's job object's accounting (Windows).
	UsageJob = platform.UsageJob
)
