package api

import (
	"fmt"
	"time"
)

// Usage is what an agent's process tree costs, measured by the service
// when a status asks for it (GET status?usage=1, see PathStatus and
// client.Client.StatusWithUsage), never in the background. An agent that does
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
// constants.
type UsageSource string

// The usage sources.
const (
	// UsageCgroup: the agent's cgroup's own accounting (Linux, where its
	// cgroup has the memory controller).
	UsageCgroup UsageSource = "cgroup"
	// UsageProcesses: the sum over the tree's live processes.
	UsageProcesses UsageSource = "processes"
	// UsageJob: the agent's job object's accounting (Windows).
	UsageJob UsageSource = "job"
)

// CPUText writes the CPU time as 0.42s, 12.3s, 4m05s or 3h07m.
func (u Usage) CPUText() string {
	secs := u.CPUSeconds
	d := time.Duration(secs * float64(time.Second))
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", secs)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", secs)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// MemoryText writes the memory as 512K, 64.2M or 1.50G (powers of 1024).
func (u Usage) MemoryText() string {
	n := u.MemoryBytes
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%dK", (n+1023)>>10)
	case n < 1<<30:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
}
