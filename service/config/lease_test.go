package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLease(t *testing.T) {
	src := `lease:
  etcd:
    endpoints: ["http://127.0.0.1:2379", "https://etcd.example:2379/"]
    tls: {ca: ca.pem, cert: %q, key: %q}
  ttl: 4s
  host: laptop
  prefix: /team/tether
agents:
  - id: a
    command: [x]
    stop_timeout: 1s
  - id: b
    command: [x]
    stop_timeout: 1m
    lease: local
`
	// Absolute paths as this system writes them (a path from / is not
	// absolute on Windows), kept as they are; a relative one is the
	// config's directory's.
	dir := os.TempDir()
	cert, key := filepath.Join(dir, "me.pem"), filepath.Join(dir, "me.key")
	src = fmt.Sprintf(src, cert, key)
	cfg, err := Parse("/etc/tether/agents.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Lease{
		Endpoints: []string{"http://127.0.0.1:2379", "https://etcd.example:2379/"},
		TLS:       &LeaseTLS{CA: filepath.Join(filepath.Dir(cfg.Path), "ca.pem"), Cert: cert, Key: key},
		TTL:       4 * time.Second, Host: "laptop", Prefix: "/team/tether", Line: 1,
	}
	if !reflect.DeepEqual(cfg.Lease, want) {
		t.Errorf("lease = %+v, want %+v", cfg.Lease, want)
	}
	if cfg.Agents[0].LeaseLocal || !cfg.Agents[1].LeaseLocal {
		t.Errorf("lease: local read as %v and %v, want false and true", cfg.Agents[0].LeaseLocal, cfg.Agents[1].LeaseLocal)
	}
}

// Without a lease section there is no lease; with one, what is not
// written takes its default.
func TestLeaseDefaults(t *testing.T) {
	cfg, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n"))
	if err != nil || cfg.Lease != nil {
		t.Fatalf("no lease section: lease %+v, %v; want nil", cfg.Lease, err)
	}
	host, err := os.Hostname()
	if err != nil || !validID(host) {
		t.Skipf("the hostname %q cannot be a default", host)
	}
	cfg, err = Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\nlease: {etcd: {endpoints: [\"http://127.0.0.1:2379\"]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Lease
	if l.TTL != DefaultLeaseTTL || l.Host != host || l.Prefix != DefaultLeasePrefix || l.TLS != nil || l.Line != 4 {
		t.Errorf("lease = %+v, want ttl %v, host %q, prefix %q, no TLS, line 4", l, DefaultLeaseTTL, host, DefaultLeasePrefix)
	}
	// The default stop_timeout fits in the default ttl.
	if DefaultStopTimeout > l.MaxStopTimeout() {
		t.Errorf("the default stop_timeout %v does not fit in the default ttl (at most %v)", DefaultStopTimeout, l.MaxStopTimeout())
	}
}

func TestLeaseErrors(t *testing.T) {
	const agent = "agents:\n  - id: a\n    command: [x]\n"
	const etcd = "  etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n"
	for _, c := range []struct {
		name, yaml string
		want       []want
	}{
		{"empty", agent + "lease:\n", []want{{line: 4, key: "lease", msg: "is empty"}}},
		{"not a mapping", agent + "lease: etcd\n", []want{{line: 4, key: "lease", msg: "must be a mapping"}}},
		{"no etcd", agent + "lease:\n  ttl: 4s\n", []want{{line: 4, key: "lease.etcd", msg: "missing"}}},
		{"unknown key", agent + "lease:\n" + etcd + "  ttl: 4s\n  tll: 4s\n", []want{{line: 7, key: "lease.tll", msg: "unknown key"}}},
		{"unknown etcd key", agent + "lease:\n  etcd:\n    endpoints: [\"http://h:1\"]\n    user: root\n", []want{{line: 7, key: "lease.etcd.user", msg: "unknown key"}}},
		{"no endpoints", agent + "lease:\n  etcd: {tls: {ca: ca.pem}}\n", []want{{line: 5, key: "lease.etcd.endpoints", msg: "missing"}}},
		{"empty endpoints", agent + "lease:\n  etcd: {endpoints: []}\n", []want{{line: 5, key: "lease.etcd.endpoints", msg: "must be a list"}}},
		{"endpoint no scheme", agent + "lease:\n  etcd:\n    endpoints:\n      - \"http://h:2379\"\n      - \"h:2379\"\n", []want{{line: 8, key: "lease.etcd.endpoints[1]", msg: "not an etcd client URL"}}},
		{"endpoint no port", agent + "lease:\n  etcd: {endpoints: [\"https://h\"]}\n", []want{{line: 5, key: "lease.etcd.endpoints[0]", msg: "not an etcd client URL"}}},
		{"cert without key", agent + "lease:\n  etcd:\n    endpoints: [\"https://h:2379\"]\n    tls: {cert: me.pem}\n", []want{{line: 7, key: "lease.etcd.tls", msg: "cert and key"}}},
		{"tls unknown", agent + "lease:\n  etcd:\n    endpoints: [\"https://h:2379\"]\n    tls: {password: x}\n", []want{{line: 7, key: "lease.etcd.tls.password", msg: "unknown key"}}},
		{"ttl not a duration", agent + "lease:\n" + etcd + "  ttl: long\n", []want{{line: 6, key: "lease.ttl", msg: "not a duration"}}},
		{"ttl too short", agent + "lease:\n" + etcd + "  ttl: 1s\n", []want{{line: 6, key: "lease.ttl", msg: "less than the minimum"}}},
		{"ttl fraction", agent + "lease:\n" + etcd + "  ttl: 4500ms\n", []want{{line: 6, key: "lease.ttl", msg: "whole number of seconds"}}},
		{"bad host", agent + "lease:\n" + etcd + "  host: \"my laptop\"\n", []want{{line: 6, key: "lease.host", msg: "not a valid host name"}}},
		{"bad prefix", agent + "lease:\n" + etcd + "  prefix: tether/\n", []want{{line: 6, key: "lease.prefix", msg: "must start with '/'"}}},
		{"agent lease", "agents:\n  - id: a\n    command: [x]\n    lease: global\n", []want{{line: 4, key: "agents[0].lease", msg: "\"local\""}}},
		{"unknown root key", agent + "leases: {}\n", []want{{line: 4, key: "leases", msg: "agents, lease"}}},
		// The default stop_timeout (5s) plus the margin does not fit in
		// 4s; the line is the agent's when it names no stop_timeout.
		{"default stop_timeout too long", agent + "lease:\n" + etcd + "  ttl: 4s\n", []want{{line: 2, key: "agents[0].stop_timeout", msg: "does not fit in the lease's ttl of 4s (line 4)"}}},
		{"stop_timeout too long", "lease:\n" + etcd + "  ttl: 4s\nagents:\n  - id: a\n    command: [x]\n  - id: b\n    command: [x]\n    stop_timeout: 2s\n",
			[]want{{line: 5, key: "agents[0].stop_timeout"}, {line: 9, key: "agents[1].stop_timeout", msg: "two thirds of the ttl (1.67s here)"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("agents.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			got := problems(t, err)
			if len(got) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(c.want), err)
			}
			for i, w := range c.want {
				g := got[i]
				if g.File != "agents.yaml" || g.Line != w.line || g.Key != w.key || !strings.Contains(g.Msg, w.msg) {
					t.Errorf("problem %d = %v, want line %d, key %q, saying %q", i, g, w.line, w.key, w.msg)
				}
			}
		})
	}
}

// A short ttl stays usable: 4s with a 1s stop_timeout, as in the tests
// of leases; so does the longest stop_timeout that fits.
func TestLeaseShortTTL(t *testing.T) {
	for _, c := range []struct{ ttl, stop string }{{"4s", "1s"}, {"4s", "1660ms"}, {"10s", "5s"}, {"2s", "100ms"}} {
		src := "lease:\n  etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n  ttl: " + c.ttl + "\n  host: h\nagents:\n  - id: a\n    command: [x]\n    stop_timeout: " + c.stop + "\n"
		if _, err := Parse("agents.yaml", []byte(src)); err != nil {
			t.Errorf("ttl %s with stop_timeout %s: %v", c.ttl, c.stop, err)
		}
	}
}
