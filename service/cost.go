package service

import (
	"runtime"
	"sync"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// What each agent costs is measured by the service itself, when a status
// asks for it, from what its guardian said of the tree when the agent
// started (ready: the session, the guardian as the tree's subreaper, the
// cgroup, the job): the guardian is not asked over the tether. So a
// status of many agents is one pass in one process, not a round trip to
// each guardian; the guardians, whose only work is to hold a lifetime,
// gain no code and no message (the protocol stays as it is, and a
// guardian of an older tether, still running after an upgrade, is
// measured the same); and an agent whose guardian is busy tearing down is
// measured all the same. Nothing is sampled in the background: an idle
// service does not wake for it.

// treeOf is the tree of a started agent, as its guardian's ready answer
// describes it. The session's leader is named with its start time, read
// now (the agent has just started), so that its PID, reused later by
// another process, never names that one's session.
func treeOf(r wire.Ready) platform.Tree { return treeLed(r, platform.Ref{}) }

// treeLed is treeOf with the leader known already (read when the agent
// started, by the service before an upgrade); a zero leader, or one of
// another pid, is read now.
func treeLed(r wire.Ready, leader platform.Ref) platform.Tree {
	pid := r.SessionID
	if pid == 0 {
		pid = r.AgentPID
	}
	if leader.Pid != pid {
		var err error
		if leader, err = platform.RefOf(pid); err != nil {
			leader = platform.Ref{Pid: pid} // gone already: its session may live on
		}
	}
	return platform.Tree{Leader: leader, Root: r.GuardianPID, RootSubreaper: r.Subreaper, Cgroup: r.Cgroup, Job: r.Job}
}

// setTree records the tree of agent id's running session, or that it has
// none (nil).
func (c *Controller) setTree(id string, t *platform.Tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t == nil {
		delete(c.trees, id)
	} else {
		c.trees[id] = *t
	}
}

// usageSources names each way the platform measures a tree in the API's
// words.
var usageSources = map[platform.UsageSource]api.UsageSource{
	platform.UsageCgroup:    api.UsageCgroup,
	platform.UsageProcesses: api.UsageProcesses,
	platform.UsageJob:       api.UsageJob,
}

// StatusWithUsage implements localapi.Backend: the status, each row with
// what its tree costs, measured now. An agent without a running session
// costs nothing (a zero Usage); one whose tree could not be measured has
// no Usage.
func (c *Controller) StatusWithUsage() api.Status {
	stateErr := c.store.Err()
	c.mu.Lock()
	st := c.statusLocked(stateErr)
	trees := make(map[string]platform.Tree, len(c.trees))
	for id, t := range c.trees {
		trees[id] = t
	}
	c.mu.Unlock()
	// Measured outside the lock, the agents going on meanwhile, on as
	// many threads as Go runs at once: a measure is mostly reads of
	// /proc (Pss costs the kernel a walk of each process's mappings).
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range st.Agents {
		t, ok := trees[st.Agents[i].ID]
		if !ok {
			st.Agents[i].Usage = &api.Usage{}
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if m, err := platform.TreeUsage(t); err == nil {
				st.Agents[i].Usage = &api.Usage{CPUSeconds: m.CPU.Seconds(), MemoryBytes: m.Memory, Procs: m.Procs, Source: usageSources[m.Source]}
			}
		})
	}
	wg.Wait()
	return st
}
