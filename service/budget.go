package service

import (
	"time"

	"github.com/tether-dev/tether/service/config"
)

// killGrace is what a guardian gives the kernel after its SIGKILL, beyond
// an agent's stop timeout (guardian's default kill grace).
const killGrace = 2 * time.Second

// StopBudget is the longest a shutdown of cfg's agents may take: agents
// stop side by side, but each only once the agents that come after it
// (after:, requires:) have stopped, so it is the longest chain of stop
// timeouts (each with the guardian's kill grace). A service manager's
// stop timeout must cover it (see install.Options.StopTimeout).
func StopBudget(cfg *config.Config) time.Duration {
	byID := map[string]config.Agent{}
	for _, a := range cfg.Agents {
		byID[a.ID] = a
	}
	g := newDepGraph(cfg)
	memo := map[string]time.Duration{}
	var longest func(id string) time.Duration
	longest = func(id string) time.Duration {
		if d, ok := memo[id]; ok {
			return d
		}
		memo[id] = 0 // the config has no cycles; this only bounds a bad one
		var after time.Duration
		for _, d := range g.dependents[id] {
			after = max(after, longest(d))
		}
		a := byID[id]
		timeout := a.StopTimeout
		if timeout == 0 {
			timeout = config.DefaultStopTimeout
		}
		memo[id] = after + timeout + killGrace
		return memo[id]
	}
	var budget time.Duration
	for _, a := range cfg.Agents {
		budget = max(budget, longest(a.ID))
	}
	return budget
}
