package service

import (
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
)

// readiness is the guardian's view of an agent's readiness and health
// checks; nil when it has neither, so such an agent costs nothing more.
func readiness(a config.Agent, p Paths) *guardian.Readiness {
	if a.Ready == nil && a.Health == nil {
		return nil
	}
	r := &guardian.Readiness{
		Ready:        a.Ready,
		StartTimeout: guardian.Duration(a.StartTimeout),
		Watchdog:     guardian.Duration(a.Watchdog),
		NotifyDir:    p.NotifyDir(),
	}
	if h := a.Health; h != nil {
		r.Health = &guardian.HealthCheck{Check: h.Check, Every: guardian.Duration(h.Every),
			Timeout: guardian.Duration(h.Timeout), Failures: h.Failures}
	}
	return r
}
