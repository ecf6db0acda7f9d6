package config

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/probe"
	"gopkg.in/yaml.v3"
)

// The keys of readiness, health and ordering.
const (
	keyReady        = "ready"
	keyStartTimeout = "start_timeout"
	keyWatchdog     = "watchdog"
	keyHealth       = "health"
	keyAfter        = "after"
	keyRequires     = "requires"

	// Inside health:
	keyEvery    = "every"
	keyTimeout  = "timeout"
	keyFailures = "failures"
)

// Defaults and limits of readiness and health.
const (
	DefaultStartTimeout  = 60 * time.Second
	MaxStartTimeout      = 24 * time.Hour
	MinWatchdog          = 100 * time.Millisecond
	MaxWatchdog          = time.Hour
	DefaultHealthEvery   = 10 * time.Second
	MinHealthEvery       = 100 * time.Millisecond
	DefaultHealthTimeout = time.Second
	DefaultHealthFails   = 3
	MaxHealthFails       = 100
)

// Health is an agent's health check: Check every Every, each run bounded
// by Timeout; Failures failures in a row restart the agent by its policy.
type Health struct {
	Check    probe.Spec
	Every    time.Duration
	Timeout  time.Duration
	Failures int
}

// agentReadiness reads ready, start_timeout, watchdog, health, after and
// requires.
func (p *parser) agentReadiness(a *parsedAgent, e entry) {
	if kv, set := e.value(keyReady); set {
		a.Ready = p.ready(kv, e.k(keyReady))
	}
	if kv, set := e.value(keyStartTimeout); set {
		p.duration(kv, e.k(keyStartTimeout), time.Millisecond, MaxStartTimeout, &a.StartTimeout)
	}
	if kv, set := e.value(keyWatchdog); set {
		_, readySet := e.value(keyReady)
		switch {
		case !p.duration(kv, e.k(keyWatchdog), MinWatchdog, MaxWatchdog, &a.Watchdog):
		case !readySet:
			p.errorf(kv.val.Line, e.k(keyWatchdog), "needs ready: notify (the agent pings with WATCHDOG=1)")
		case a.Ready != nil && a.Ready.Kind != probe.KindNotify:
			p.errorf(kv.val.Line, e.k(keyWatchdog), "needs ready: notify (the agent pings with WATCHDOG=1), not ready: %s", a.Ready.Kind)
		}
	}
	if kv, set := e.value(keyHealth); set {
		a.Health = p.health(kv, e.k(keyHealth))
	}
	for _, rel := range []struct {
		key string
		dst *[]string
	}{{keyAfter, &a.After}, {keyRequires, &a.Requires}} {
		kv, set := e.value(rel.key)
		if !set {
			continue
		}
		ids, lines := p.ids(kv, e.k(rel.key))
		*rel.dst = ids
		for i, id := range ids {
			a.edges = append(a.edges, edge{from: a.ID, to: id, key: e.k(rel.key) + "[" + strconv.Itoa(i) + "]", line: lines[i]})
		}
	}
}

// unixReadiness says whether this system has what notify and fd need:
// unix datagram sockets and numbered descriptors; Windows has neither.
var unixReadiness = runtime.GOOS != "windows"

// ready reads "ready:": the scalar notify, or a one-key mapping naming the
// kind and its argument ({fd: 3}, {http: URL}, {tcp: ADDR}, {exec: [argv]},
// {log: REGEXP}).
func (p *parser) ready(kv pair, key string) *probe.Spec {
	return p.check(kv, key, probe.Kinds)
}

// check reads a check of one of the kinds allowed at key.
func (p *parser) check(kv pair, key string, allowed []probe.Kind) *probe.Spec {
	defer p.through(kv.val, key)()
	v := deref(kv.val)
	names := kindNames(allowed)
	var s probe.Spec
	line := kv.val.Line
	switch v.Kind {
	case yaml.ScalarNode:
		// Only notify takes no argument.
		s.Kind = probe.Kind(v.Value)
		if s.Kind != probe.KindNotify || !slices.Contains(allowed, s.Kind) {
			p.errorf(line, key, "%s is not a check: write one of %s", describe(v), examples(allowed))
			return nil
		}
	case yaml.MappingNode:
		kvs := p.pairs(v, key, 0)
		if len(kvs) != 1 {
			p.errorf(line, key, "must name exactly one kind of check (%s), not %d", names, len(kvs))
			return nil
		}
		arg := kvs[0]
		s.Kind = probe.Kind(arg.name)
		k := key + "." + arg.name
		line = arg.val.Line
		if !slices.Contains(allowed, s.Kind) || s.Kind == probe.KindNotify {
			p.errorf(arg.key.Line, k, "unknown kind of check (here: %s)", names)
			return nil
		}
		if !p.checkArg(&s, arg, k) {
			return nil
		}
		key = k
	default:
		p.errorf(line, key, "must be a check such as %s, not %s", examples(allowed), kindName(v))
		return nil
	}
	if (s.Kind == probe.KindNotify || s.Kind == probe.KindFD) && !unixReadiness {
		p.errorf(line, key, "%s is not available on Windows, which has no unix datagram sockets (notify) or numbered descriptors to inherit (fd); use http, tcp, exec or log", s.Kind)
		return nil
	}
	if err := s.Validate(); err != nil {
		p.add(&Error{File: p.file, Line: line, Key: key, Msg: strings.TrimPrefix(err.Error(), probe.ErrInvalid.Error()+": "), Err: err})
		return nil
	}
	return &s
}

// checkArg reads the argument of a check's kind into s.
func (p *parser) checkArg(s *probe.Spec, arg pair, key string) bool {
	switch s.Kind {
	case probe.KindFD:
		v := deref(arg.val)
		n, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil {
			p.errorf(arg.val.Line, key, "%s is not a descriptor number such as 3", describe(v))
			return false
		}
		s.FD = n
	case probe.KindExec:
		s.Argv = p.command(arg, key)
		return s.Argv != nil
	default:
		str, ok := p.str(arg, key)
		if !ok {
			return false
		}
		switch s.Kind {
		case probe.KindHTTP:
			s.URL = str
		case probe.KindTCP:
			s.Addr = str
		case probe.KindLog:
			s.Pattern = str
		}
	}
	return true
}

// health reads "health:": a check of an outside kind plus every, timeout
// and failures.
func (p *parser) health(kv pair, key string) *Health {
	defer p.through(kv.val, key)()
	v := deref(kv.val)
	if v.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping such as {http: \"http://127.0.0.1:8080/health\", every: 10s}, not %s", kindName(v))
		return nil
	}
	h := &Health{Every: DefaultHealthEvery, Timeout: DefaultHealthTimeout, Failures: DefaultHealthFails}
	var checks []pair
	ok := true
	for _, e := range p.pairs(v, key, 0) {
		k := key + "." + e.name
		switch {
		case e.name == keyEvery:
			ok = p.duration(e, k, MinHealthEvery, MaxWatchdog, &h.Every) && ok
		case e.name == keyTimeout:
			ok = p.duration(e, k, time.Millisecond, MaxWatchdog, &h.Timeout) && ok
		case e.name == keyFailures:
			ok = p.count(e, k, 1, MaxHealthFails, &h.Failures) && ok
		case slices.Contains(probe.HealthKinds, probe.Kind(e.name)):
			checks = append(checks, e)
		default:
			p.errorf(e.key.Line, k, "%s (health has one of %s, and %s, %s, %s)", unknownKey(e.name, append(kindStrings(probe.HealthKinds), keyEvery, keyTimeout, keyFailures)), kindNames(probe.HealthKinds), keyEvery, keyTimeout, keyFailures)
			ok = false
		}
	}
	if len(checks) != 1 {
		// An unknown key already said what is wrong.
		if ok || len(checks) > 1 {
			p.errorf(kv.val.Line, key, "must name exactly one check (%s), not %d", kindNames(probe.HealthKinds), len(checks))
		}
		return nil
	}
	h.Check.Kind = probe.Kind(checks[0].name)
	k := key + "." + checks[0].name
	if !p.checkArg(&h.Check, checks[0], k) {
		return nil
	}
	if err := h.Check.Validate(); err != nil {
		p.add(&Error{File: p.file, Line: checks[0].val.Line, Key: k, Msg: strings.TrimPrefix(err.Error(), probe.ErrInvalid.Error()+": "), Err: err})
		return nil
	}
	if ok && h.Timeout > h.Every {
		p.errorf(kv.val.Line, key+"."+keyTimeout, "%v is longer than every (%v): a check must end before the next begins", h.Timeout, h.Every)
		return nil
	}
	if !ok {
		return nil
	}
	return h
}

// duration reads a duration between lo and hi into dst.
func (p *parser) duration(kv pair, key string, lo, hi time.Duration, dst *time.Duration) bool {
	s, good := p.str(kv, key)
	if !good {
		return false
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		p.errorf(kv.val.Line, key, "%s is not a duration: write a number with a unit, e.g. 5s, 500ms or 1m30s", short(s))
	case d < lo:
		p.errorf(kv.val.Line, key, "%s is less than the minimum of %v", short(s), lo)
	case d > hi:
		p.errorf(kv.val.Line, key, "%s is more than the limit of %v", short(s), hi)
	default:
		*dst = d
		return true
	}
	return false
}

// count reads a whole number between lo and hi into dst.
func (p *parser) count(kv pair, key string, lo, hi int, dst *int) bool {
	v := deref(kv.val)
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < lo || n > hi {
		p.errorf(kv.val.Line, key, "%s is not a whole number from %d to %d", describe(v), lo, hi)
		return false
	}
	*dst = n
	return true
}

// ids reads a list of agent ids (after:, requires:); each is checked
// against the config's ids once every agent is read (see graph).
func (p *parser) ids(kv pair, key string) ([]string, []int) {
	defer p.through(kv.val, key)()
	v := deref(kv.val)
	if isNull(v) {
		return nil, nil
	}
	if v.Kind == yaml.ScalarNode {
		p.errorf(kv.val.Line, key, "must be a list of agent ids such as [ollama], not %s", kindName(v))
		return nil, nil
	}
	if v.Kind != yaml.SequenceNode {
		p.errorf(kv.val.Line, key, "must be a list of agent ids such as [ollama], not %s", kindName(v))
		return nil, nil
	}
	var ids []string
	var lines []int
	for i, item := range v.Content {
		if !p.visit(item) {
			return nil, nil
		}
		k := key + "[" + strconv.Itoa(i) + "]"
		s, good := p.str(pair{key: kv.key, val: item}, k)
		if !good {
			continue
		}
		if j := slices.Index(ids, s); j >= 0 {
			p.errorf(item.Line, k, "%s is listed twice (also at line %d)", short(s), lines[j])
			continue
		}
		ids = append(ids, s)
		lines = append(lines, item.Line)
	}
	return ids, lines
}

func kindNames(ks []probe.Kind) string { return strings.Join(kindStrings(ks), ", ") }

// kindStrings is each kind's name.
func kindStrings(ks []probe.Kind) []string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return s
}

// examples shows how each allowed kind is written.
func examples(ks []probe.Kind) string {
	ex := map[probe.Kind]string{
		probe.KindNotify: "notify",
		probe.KindFD:     "{fd: 3}",
		probe.KindHTTP:   `{http: "http://127.0.0.1:8080/health"}`,
		probe.KindTCP:    `{tcp: "127.0.0.1:8080"}`,
		probe.KindExec:   "{exec: [check-it]}",
		probe.KindLog:    `{log: "listening on"}`,
	}
	s := make([]string, 0, len(ks))
	for _, k := range ks {
		s = append(s, ex[k])
	}
	return strings.Join(s, ", ")
}

// edge is one entry of after: or requires:, kept for the graph check.
type edge struct {
	from, to string
	key      string
	line     int
}

// graph checks after: and requires: across the config: every id named
// exists, no agent names itself, and the ordering has no cycle. Each
// problem names the entry's file, line and key.
func (p *parser) graph(edges []edge, ids map[string]seen) {
	next := map[string][]edge{}
	var froms []string
	for _, e := range edges {
		switch {
		case e.to == e.from:
			p.errorf(e.line, e.key, "%s names the agent itself", short(e.to))
		case !hasID(ids, e.to):
			p.errorf(e.line, e.key, "%s is not the id of an agent in this config", short(e.to))
		default:
			if _, seen := next[e.from]; !seen {
				froms = append(froms, e.from)
			}
			next[e.from] = append(next[e.from], e)
		}
	}
	// Depth-first, from each agent in the config's order, so the cycle
	// reported is the same every time; one cycle is enough to act on.
	done := map[string]bool{}
	var stack []string
	var visit func(id string) bool
	visit = func(id string) bool {
		stack = append(stack, id)
		for _, e := range next[id] {
			if i := slices.Index(stack, e.to); i >= 0 {
				cycle := append(slices.Clone(stack[i:]), e.to)
				p.errorf(e.line, e.key, "%s makes a cycle: %s", short(e.to), strings.Join(cycle, " -> "))
				return true
			}
			if !done[e.to] && visit(e.to) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		done[id] = true
		return false
	}
	for _, from := range froms {
		if !done[from] && visit(from) {
			return
		}
	}
}

func hasID(ids map[string]seen, id string) bool { _, ok := ids[id]; return ok }
