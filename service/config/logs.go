package config

import (
	"math"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/logfile"
	"gopkg.in/yaml.v3"
)

// The keys of a logs section, at the top of the config (the default of
// every agent) and in an agent.
const (
	keyLogs       = "logs"
	keyMaxSize    = "max_size"
	keyKeep       = "keep"
	keyTimestamps = "timestamps"
)

var logsKeys = []string{keyMaxSize, keyKeep, keyTimestamps}

// MaxLogSize bounds max_size.
const MaxLogSize = 1 << 40

// sizeUnits are the units a size may have, by their lower-case names.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// logsSection is what one logs section says: each key it sets.
type logsSection struct {
	maxSize *int64
	keep    *int
	stamps  *bool
}

// over returns base with what s sets in place of base's.
func (s logsSection) over(base logfile.Policy) logfile.Policy {
	if s.maxSize != nil {
		base.MaxSize = *s.maxSize
	}
	if s.keep != nil {
		base.Keep = *s.keep
	}
	if s.stamps != nil {
		base.Timestamps = *s.stamps
	}
	return base
}

func (s logsSection) empty() bool { return s.maxSize == nil && s.keep == nil && s.stamps == nil }

// logs reads a logs section, key naming it in messages ("logs",
// "agents[2].logs").
func (p *parser) logs(kv pair, key string) logsSection {
	var s logsSection
	m := deref(kv.val)
	if isNull(m) {
		return s
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping of %s, e.g. {max_size: 10MiB, keep: 5, timestamps: true}, not %s", strings.Join(logsKeys, ", "), kindName(m))
		return s
	}
	vals := p.known(m, key, logsKeys)
	if v, set := vals[keyMaxSize]; set {
		if n, ok := p.size(v, key+"."+keyMaxSize, logfile.MinSize, MaxLogSize); ok {
			s.maxSize = &n
		}
	}
	if v, set := vals[keyKeep]; set {
		var n int
		if p.count(v, key+"."+keyKeep, 0, logfile.MaxKeep, &n) {
			s.keep = &n
		}
	}
	if v, set := vals[keyTimestamps]; set {
		n := deref(v.val)
		var b bool
		if err := n.Decode(&b); err != nil || n.Kind != yaml.ScalarNode {
			p.errorf(v.val.Line, key+"."+keyTimestamps, "%s is not true or false", describe(n))
		} else {
			s.stamps = &b
		}
	}
	return s
}

// size reads a size in bytes between lo and hi: a whole number, or a
// number with a unit (B, KB, MB, GB, KiB, MiB, GiB).
func (p *parser) size(kv pair, key string, lo, hi int64) (int64, bool) {
	v := deref(kv.val)
	if v.Kind != yaml.ScalarNode {
		p.errorf(kv.val.Line, key, "%s is not a size: write a number with a unit, e.g. 10MiB or 256KiB", describe(v))
		return 0, false
	}
	s := strings.TrimSpace(v.Value)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	f, err := strconv.ParseFloat(num, 64)
	mult, known := sizeUnits[unit]
	if err != nil || !known || f < 0 || math.IsInf(f, 0) {
		p.errorf(kv.val.Line, key, "%s is not a size: write a number with a unit, e.g. 10MiB or 256KiB (B, KB, MB, GB, KiB, MiB, GiB)", short(s))
		return 0, false
	}
	n := f * float64(mult)
	switch {
	case n < float64(lo):
		p.errorf(kv.val.Line, key, "%s is less than the minimum of %d bytes", short(s), lo)
	case n > float64(hi):
		p.errorf(kv.val.Line, key, "%s is more than the limit of %d GiB", short(s), hi>>30)
	default:
		return int64(n), true
	}
	return 0, false
}

// agentLogs reads an agent's logs section over the config's default.
func (p *parser) agentLogs(a *parsedAgent, e entry) {
	s := logsSection{}
	if kv, set := e.value(keyLogs); set {
		s = p.logs(kv, e.k(keyLogs))
	}
	if s.empty() && p.logsDefault.empty() {
		return // the guardian's default, and the entry's fingerprint as before
	}
	pol := s.over(p.logsDefault.over(logfile.Default()))
	a.Logs = &pol
}
