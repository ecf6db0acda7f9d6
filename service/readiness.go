package service

import (
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/wire"
)

// readiness is the guardian's view of an agent's readiness and health
// checks; nil when it has neither, so such an agent costs nothing more.
func readiness(a config.Agent, p Paths) *guardian.Readiness {
	if a.Ready == nil && a.Health == nil {
		return nil
	}
	r := &guardian.Readiness{
		Ready:        a.Ready,
		StartTimeout: wire.Duration(a.StartTimeout),
		Watchdog:     wire.Duration(a.Watchdog),
		NotifyDir:    p.NotifyDir(),
	}
	if h := a.Health; h != nil {
		r.Health = &guardian.HealthCheck{Check: h.Check, Every: wire.Duration(h.Every),
			Timeout: wire.Duration(h.Timeout), Failures: h.Failures}
	}
	return r
}
