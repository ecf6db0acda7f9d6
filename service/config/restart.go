package config

import (
	"time"

	"github.com/tether-dev/tether/api"
	"gopkg.in/yaml.v3"
)

// The keys of a restart mapping, an agent's or the profile's default at
// the top of the config.
const (
	keyPolicy       = "policy"
	keyBackoff      = "backoff"
	keyMaxBackoff   = "max_backoff"
	keyHealthyAfter = "healthy_after"
	keyCrashLoop    = "crash_loop"
	// Inside crash_loop:
	keyWithin = "within"
	// crashLoopNever is crash_loop's value that never parks an agent.
	crashLoopNever = "never"
)

var restartKeys = []string{keyPolicy, keyBackoff, keyMaxBackoff, keyHealthyAfter, keyCrashLoop}

// Defaults and limits of the restart policy's numbers. No default parks
// an agent: a relay down for an hour makes an agent end as often as a
// broken one does, and only the person can tell them apart (crash_loop).
const (
	DefaultBackoff      = time.Second
	DefaultMaxBackoff   = time.Minute
	DefaultHealthyAfter = time.Minute
	MinBackoff          = time.Millisecond
	MaxBackoff          = 24 * time.Hour
	MaxHealthyAfter     = 24 * time.Hour
	MaxCrashFailures    = 1000
	MaxCrashWindow      = 7 * 24 * time.Hour
)

// Retry is the numbers of an agent's restart policy.
type Retry struct {
	// Backoff is the pause before the first restart after a failure;
	// each failure that follows doubles it, up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// HealthyAfter is the uptime after which a run counts as healthy:
	// when it ends, its backoff starts again at Backoff and its earlier
	// failures no longer count toward a crash loop.
	HealthyAfter time.Duration
	// CrashLoop is when the agent is parked; its zero value never parks.
	CrashLoop CrashLoop
}

// CrashLoop is what counts as a crash loop: Failures failures within
// Within, with no healthy run between them. Failures 0 means never: the
// agent is restarted for as long as it fails.
type CrashLoop struct {
	Failures int
	Within   time.Duration
}

// DefaultRetry is the restart policy's numbers when the config gives
// none.
func DefaultRetry() Retry {
	return Retry{Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, HealthyAfter: DefaultHealthyAfter}
}

// restartRule is a restart mapping's policy and numbers.
type restartRule struct {
	policy api.RestartPolicy
	retry  Retry
}

// profileRestart reads the restart mapping at the top of the config: the
// default of every agent, which an agent's own keys override one by one.
func (p *parser) profileRestart(kv pair) {
	v := deref(kv.val)
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, keyRestart, "must be a mapping of the agents' defaults, such as {backoff: 1s, max_backoff: 5m}, not %s", kindName(v))
		return
	}
	rule := p.restartRule
	if p.restartMapping(kv, keyRestart, &rule) {
		p.restartRule = rule
	}
}

// agentRestart checks the restart policy: a policy's name, or a mapping
// of a policy and numbers; what it leaves out comes from the profile's
// default (the top of the config), else from the defaults.
func (p *parser) agentRestart(a *parsedAgent, e entry) {
	a.Restart, a.Retry = p.restartRule.policy, p.restartRule.retry
	kv, set := e.value(keyRestart)
	if !set {
		return
	}
	k := e.k(keyRestart)
	if v := deref(kv.val); v.Kind == yaml.MappingNode {
		rule := p.restartRule
		if p.restartMapping(kv, k, &rule) {
			a.Restart, a.Retry = rule.policy, rule.retry
		}
		return
	}
	if pol, ok := p.policy(kv, k); ok {
		a.Restart = pol
	}
}

// policy reads a restart policy's name.
func (p *parser) policy(kv pair, key string) (api.RestartPolicy, bool) {
	s, good := p.str(kv, key)
	if !good {
		return "", false
	}
	if pol := api.RestartPolicy(s); pol.Valid() {
		return pol, true
	}
	p.errorf(kv.val.Line, key, "%s is not one of %s, nor a mapping such as {policy: always, max_backoff: 5m}", short(s), policyList())
	return "", false
}

// restartMapping reads a restart mapping over rule, and reports whether
// all of it was valid.
func (p *parser) restartMapping(kv pair, key string, rule *restartRule) bool {
	defer p.through(kv.val, key)()
	before := len(p.errs)
	vals := p.known(deref(kv.val), key, restartKeys)
	ok := len(p.errs) == before
	r := &rule.retry
	for _, name := range restartKeys {
		e, set := vals[name]
		if !set {
			continue
		}
		k := key + "." + name
		switch name {
		case keyPolicy:
			pol, good := p.policy(e, k)
			rule.policy = pol
			ok = good && ok
		case keyBackoff:
			ok = p.duration(e, k, MinBackoff, MaxBackoff, &r.Backoff) && ok
		case keyMaxBackoff:
			ok = p.duration(e, k, MinBackoff, MaxBackoff, &r.MaxBackoff) && ok
		case keyHealthyAfter:
			ok = p.duration(e, k, MinBackoff, MaxHealthyAfter, &r.HealthyAfter) && ok
		case keyCrashLoop:
			ok = p.crashLoop(e, k, &r.CrashLoop) && ok
		}
	}
	if e, set := vals[keyMaxBackoff]; ok && set && r.MaxBackoff < r.Backoff {
		p.errorf(e.val.Line, key+"."+keyMaxBackoff, "%v is less than backoff (%v): the longest pause cannot be shorter than the first", r.MaxBackoff, r.Backoff)
		ok = false
	}
	// A first pause longer than the longest, which was not written
	// here, raises it.
	r.MaxBackoff = max(r.MaxBackoff, r.Backoff)
	return ok
}

// crashLoop reads crash_loop: never, or {failures: N, within: D}.
func (p *parser) crashLoop(kv pair, key string, dst *CrashLoop) bool {
	v := deref(kv.val)
	if v.Kind == yaml.ScalarNode {
		s, good := p.str(kv, key)
		if good && s == crashLoopNever {
			*dst = CrashLoop{}
			return true
		}
		if good {
			p.errorf(kv.val.Line, key, "%s is not %q nor a mapping such as {failures: 5, within: 1m}", short(s), crashLoopNever)
		}
		return false
	}
	if v.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be %q or a mapping such as {failures: 5, within: 1m}, not %s", crashLoopNever, kindName(v))
		return false
	}
	names := []string{keyFailures, keyWithin}
	before := len(p.errs)
	vals := p.known(v, key, names)
	var cl CrashLoop
	for _, name := range names {
		e, set := vals[name]
		if !set {
			p.errorf(kv.val.Line, key+"."+name, "missing; a crash loop is so many failures within a time, e.g. {failures: 5, within: 1m}")
			continue
		}
		if name == keyFailures {
			p.count(e, key+"."+name, 1, MaxCrashFailures, &cl.Failures)
		} else {
			p.duration(e, key+"."+name, MinBackoff, MaxCrashWindow, &cl.Within)
		}
	}
	ok := len(p.errs) == before
	if ok {
		*dst = cl
	}
	return ok
}
