package config

import (
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/wire"
	"gopkg.in/yaml.v3"
)

// The keys of the top-level lease section and of an agent's lease.
const (
	keyLease     = "lease"
	keyEtcd      = "etcd"
	keyEndpoints = "endpoints"
	keyTLS       = "tls"
	keyTTL       = "ttl"
	keyHost      = "host"
	keyPrefix    = "prefix"
	// LeaseLocal is the only value of an agent's lease: its identity is
	// held on this machine only.
	LeaseLocal = "local"
)

var (
	leaseKeys = []string{keyEtcd, keyTTL, keyHost, keyPrefix}
	etcdKeys  = []string{keyEndpoints, keyTLS}
	tlsKeys   = []string{"ca", "cert", "key"}
)

// Lease defaults and limits.
const (
	// DefaultLeaseTTL is how long a silent holder keeps its identities
	// when the config names no ttl.
	DefaultLeaseTTL = 10 * time.Second
	// MinLeaseTTL and MaxLeaseTTL bound the ttl; etcd counts a lease's
	// ttl in whole seconds and refuses very short ones.
	MinLeaseTTL = 2 * time.Second
	MaxLeaseTTL = time.Hour
	// DefaultLeasePrefix is the root of tether's keys in etcd.
	DefaultLeasePrefix = "/tether"
	// LeaseMargin is taken off the end of the ttl in the deadline a
	// holder's trees must be dead by: it covers a difference in the rate
	// of this machine's clock and etcd's, and the time the renewal took
	// to reach etcd.
	LeaseMargin = 500 * time.Millisecond
	// KillMargin is the time a tree takes to die once its stop_timeout
	// has passed: the SIGKILL, and its reaping. The guardian counts it
	// (wire.KillMargin).
	KillMargin = wire.KillMargin
)

// Lease is the validated lease section: the identities of the agents
// that do not say "lease: local" are also held in etcd, so that one
// identity runs on one machine at most.
type Lease struct {
	// Endpoints are the etcd members' client URLs.
	Endpoints []string
	// TLS, when set, is how to reach them over TLS; nil: plain, or the
	// system's roots for https endpoints.
	TLS *LeaseTLS
	// TTL is how long a silent holder keeps an identity: whole seconds,
	// DefaultLeaseTTL when unset.
	TTL time.Duration
	// Host is how this machine names itself to the others; the hostname
	// when unset.
	Host string
	// Prefix is the root of tether's keys; DefaultLeasePrefix when unset.
	Prefix string
	// Line is the line of the lease key, for messages.
	Line int
}

// LeaseTLS names the files of a TLS connection to etcd, absolute paths.
// Cert and Key come together; each may be empty.
type LeaseTLS struct {
	CA, Cert, Key string
}

// RenewEvery is how often the lease is renewed: a third of the ttl, as
// etcd's client does.
func (l *Lease) RenewEvery() time.Duration { return l.TTL / 3 }

// MaxStopTimeout is the longest stop_timeout an agent held under this
// lease may have. After a renewal etcd confirmed at t, the tree must be
// dead by t + ttl - LeaseMargin (the deadline); its guardian starts
// stopping it at the deadline less stop_timeout and KillMargin. That must
// come after the next renewal is due (t + ttl/3), or a healthy holder
// would stop its agents: stop_timeout + KillMargin + LeaseMargin must fit
// in two thirds of the ttl. With a 4 s ttl it is 1.67 s; with 10 s, 5.67 s.
func (l *Lease) MaxStopTimeout() time.Duration {
	return l.TTL - l.RenewEvery() - LeaseMargin - KillMargin
}

// lease reads the top-level lease section.
func (p *parser) lease(kv pair) *Lease {
	m := deref(kv.val)
	if isNull(m) {
		p.errorf(kv.val.Line, keyLease, "is empty; remove it to hold identities on this machine only, or give etcd's endpoints")
		return nil
	}
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, keyLease, "must be a mapping with %s, not %s", keyEtcd, kindName(m))
		return nil
	}
	before := len(p.errs)
	l := &Lease{TTL: DefaultLeaseTTL, Prefix: DefaultLeasePrefix, Line: kv.key.Line}
	vals := p.known(m, keyLease, leaseKeys)
	if e, set := vals[keyEtcd]; set {
		p.etcd(l, e)
	} else {
		p.errorf(kv.key.Line, keyLease+"."+keyEtcd, "missing; write etcd: {endpoints: [\"https://etcd.example:2379\"]}")
	}
	if t, set := vals[keyTTL]; set && p.duration(t, keyLease+"."+keyTTL, MinLeaseTTL, MaxLeaseTTL, &l.TTL) && l.TTL%time.Second != 0 {
		p.errorf(t.val.Line, keyLease+"."+keyTTL, "%s is not a whole number of seconds, which is what etcd counts", short(l.TTL.String()))
	}
	if h, set := vals[keyHost]; set {
		if s, good := p.str(h, keyLease+"."+keyHost); good {
			if !validID(s) {
				p.errorf(h.val.Line, keyLease+"."+keyHost, "%s is not a valid host name: use 1 to %d letters, digits, '.', '_', '@' or '-', starting with a letter or digit", short(s), MaxIDLen)
			}
			l.Host = s
		}
	} else {
		name, err := os.Hostname()
		if err != nil || !validID(name) {
			p.errorf(kv.key.Line, keyLease+"."+keyHost, "missing, and the hostname %s cannot name this machine; write host: NAME", short(name))
		}
		l.Host = name
	}
	if x, set := vals[keyPrefix]; set {
		if s, good := p.str(x, keyLease+"."+keyPrefix); good {
			if !strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.ContainsAny(s, "\x00\n") {
				p.errorf(x.val.Line, keyLease+"."+keyPrefix, "%s must start with '/' and not end with one, e.g. /tether", short(s))
			}
			l.Prefix = s
		}
	}
	if len(p.errs) > before {
		return nil
	}
	return l
}

// etcd reads lease.etcd: the endpoints and the TLS files.
func (p *parser) etcd(l *Lease, kv pair) {
	key := keyLease + "." + keyEtcd
	m := deref(kv.val)
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping with %s, not %s", keyEndpoints, kindName(m))
		return
	}
	vals := p.known(m, key, etcdKeys)
	e, set := vals[keyEndpoints]
	if !set {
		p.errorf(kv.key.Line, key+"."+keyEndpoints, "missing; list etcd's client URLs, e.g. [\"https://etcd.example:2379\"]")
	} else {
		l.Endpoints = p.endpoints(e, key+"."+keyEndpoints)
	}
	if t, set := vals[keyTLS]; set {
		l.TLS = p.tls(t, key+"."+keyTLS)
	}
}

// endpoints reads a non-empty list of http:// or https:// URLs.
func (p *parser) endpoints(kv pair, key string) []string {
	list := deref(kv.val)
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		p.errorf(kv.val.Line, key, "must be a list of etcd's client URLs such as [\"https://etcd.example:2379\"], not %s", kindName(list))
		return nil
	}
	var out []string
	for i, item := range list.Content {
		k := key + "[" + strconv.Itoa(i) + "]"
		s, good := p.str(pair{key: kv.key, val: item}, k)
		if !good {
			continue
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") {
			p.errorf(item.Line, k, "%s is not an etcd client URL: write http:// or https://, the host and the port, e.g. https://etcd.example:2379", short(s))
			continue
		}
		out = append(out, s)
	}
	return out
}

// tls reads lease.etcd.tls: the paths of a CA, a certificate and its key.
// Credentials never appear in the config, only where they are.
func (p *parser) tls(kv pair, key string) *LeaseTLS {
	m := deref(kv.val)
	if m.Kind != yaml.MappingNode {
		p.errorf(kv.val.Line, key, "must be a mapping of %s (paths), not %s", strings.Join(tlsKeys, ", "), kindName(m))
		return nil
	}
	vals := p.known(m, key, tlsKeys)
	t := &LeaseTLS{}
	for name, dst := range map[string]*string{"ca": &t.CA, "cert": &t.Cert, "key": &t.Key} {
		if v, set := vals[name]; set {
			if s, good := p.str(v, key+"."+name); good {
				*dst, _ = p.path(s, v.val.Line, key+"."+name)
			}
		}
	}
	if (t.Cert == "") != (t.Key == "") {
		p.errorf(kv.key.Line, key, "cert and key come together: give both, or neither")
	}
	return t
}

// known returns the pairs of mapping m by name, reporting every name not
// in names.
func (p *parser) known(m *yaml.Node, key string, names []string) map[string]pair {
	vals := map[string]pair{}
	for _, kv := range p.pairs(m, key, 0) {
		if !slices.Contains(names, kv.name) {
			p.errorf(kv.key.Line, key+"."+kv.name, "%s (%s has %s)", unknownKey(kv.name, names), key, strings.Join(names, ", "))
			continue
		}
		vals[kv.name] = kv
	}
	return vals
}

// agentLease reads an agent's lease: only "local", which keeps its
// identity on this machine.
func (p *parser) agentLease(a *parsedAgent, e entry) {
	kv, set := e.value(keyLease)
	if !set {
		return
	}
	if s, good := p.str(kv, e.k(keyLease)); good {
		if s != LeaseLocal {
			p.errorf(kv.val.Line, e.k(keyLease), "%s is not %q, the only value (the identity is held on this machine only)", short(s), LeaseLocal)
			return
		}
		a.LeaseLocal = true
	}
}

// leaseFits reports an agent held under l whose stop_timeout does not
// fit in the ttl (see Lease.MaxStopTimeout).
func (p *parser) leaseFits(l *Lease, a parsedAgent, key string) {
	most := l.MaxStopTimeout()
	if a.LeaseLocal || a.StopTimeout <= most {
		return
	}
	line := a.Line
	if a.stopLine > 0 {
		line = a.stopLine
	}
	p.errorf(line, key+"."+keyStopTimeout, "%v does not fit in the lease's ttl of %v (line %d): cut off from etcd, a holder's tree must be dead before its lease can expire, so stop_timeout plus %v must be at most two thirds of the ttl (%v here); shorten stop_timeout, lengthen the ttl, or write lease: local",
		a.StopTimeout, l.TTL, l.Line, LeaseMargin+KillMargin, most.Round(10*time.Millisecond))
}
