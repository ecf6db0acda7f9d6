package config

import "time"

// keySurvive is the key of an agent's survive_service_crash.
const keySurvive = "survive_service_crash"

// MaxSurviveCrash bounds survive_service_crash: a tree outlives a crashed
// service for a while, not for good.
const MaxSurviveCrash = 24 * time.Hour

// agentSurvive reads survive_service_crash: a duration, 0s to 24h.
func (p *parser) agentSurvive(a *parsedAgent, e entry) {
	if kv, set := e.value(keySurvive); set {
		p.duration(kv, e.k(keySurvive), 0, MaxSurviveCrash, &a.SurviveCrash)
	}
}
