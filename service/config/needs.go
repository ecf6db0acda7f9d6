package config

import (
	"net"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// The key of what an agent needs, and its values.
const (
	keyNeeds     = "needs"
	needsNetwork = "network"
	needsTCP     = "tcp"
)

// Needs is what an agent needs to be reachable to run: while it is not,
// the agent waits offline, and its endings do not count toward a crash
// loop.
type Needs struct {
	// Network: a network other than loopback, with an address, is up.
	Network bool
	// TCP lists host:port addresses that must accept a connection.
	TCP []string
}

// agentNeeds reads needs: network, {tcp: ADDR}, {tcp: [ADDR, ...]}, or
// a list of those.
func (p *parser) agentNeeds(a *parsedAgent, e entry) {
	kv, set := e.value(keyNeeds)
	if !set {
		return
	}
	k := e.k(keyNeeds)
	defer p.through(kv.val, k)()
	before := len(p.errs)
	n := &Needs{}
	v := deref(kv.val)
	if v.Kind == yaml.SequenceNode {
		for i, item := range v.Content {
			if !p.visit(item) {
				return
			}
			p.need(pair{name: keyNeeds, key: kv.key, val: item}, k+"["+strconv.Itoa(i)+"]", n)
		}
	} else {
		p.need(kv, k, n)
	}
	if len(p.errs) == before && (n.Network || len(n.TCP) > 0) {
		a.Needs = n
	}
}

// need reads one need into n.
func (p *parser) need(kv pair, key string, n *Needs) {
	v := deref(kv.val)
	switch v.Kind {
	case yaml.ScalarNode:
		s, good := p.str(kv, key)
		if !good {
			return
		}
		if s != needsNetwork {
			p.errorf(kv.val.Line, key, "%s is not %q nor a mapping such as {tcp: \"relay.example:443\"}", short(s), needsNetwork)
			return
		}
		n.Network = true
	case yaml.MappingNode:
		for name, e := range p.known(v, key, []string{needsTCP}) {
			p.tcpNeeds(e, key+"."+name, n)
		}
	default:
		p.errorf(kv.val.Line, key, "must be %q, a mapping such as {tcp: \"relay.example:443\"} or a list of those, not %s", needsNetwork, kindName(v))
	}
}

// tcpNeeds reads tcp: ADDR or tcp: [ADDR, ...] into n.
func (p *parser) tcpNeeds(kv pair, key string, n *Needs) {
	v := deref(kv.val)
	items := []pair{kv}
	if v.Kind == yaml.SequenceNode {
		items = items[:0]
		for _, item := range v.Content {
			items = append(items, pair{name: kv.name, key: kv.key, val: item})
		}
	}
	for _, item := range items {
		s, good := p.str(item, key)
		if !good {
			continue
		}
		host, port, err := net.SplitHostPort(s)
		if num, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || num < 1 || num > 65535 {
			p.errorf(item.val.Line, key, "%s is not a host:port such as \"relay.example:443\" or \"[::1]:8080\"", short(s))
			continue
		}
		if !slices.Contains(n.TCP, s) {
			n.TCP = append(n.TCP, s)
		}
	}
}
