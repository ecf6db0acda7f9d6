package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

func TestRestartNumbersAndNeeds(t *testing.T) {
	cfg, err := Parse("", []byte(`restart: {backoff: 2s, max_backoff: 10m, crash_loop: {failures: 5, within: 10m}}
agents:
  - id: a
    command: [x]
  - id: b
    command: [x]
    restart: always
  - id: c
    command: [x]
    restart: {policy: never, max_backoff: 5s, healthy_after: 30s, crash_loop: never}
    needs: network
  - id: e
    command: [x]
    restart: {backoff: 1h}
  - id: d
    command: [x]
    needs: [network, {tcp: "relay.example:443"}, {tcp: ["127.0.0.1:9", "[::1]:80", "relay.example:443"]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	profile := Retry{Backoff: 2 * time.Second, MaxBackoff: 10 * time.Minute, HealthyAfter: DefaultHealthyAfter,
		CrashLoop: CrashLoop{Failures: 5, Within: 10 * time.Minute}}
	want := []struct {
		policy api.RestartPolicy
		retry  Retry
		needs  *Needs
	}{
		{DefaultRestart, profile, nil},
		{api.RestartAlways, profile, nil},
		{api.RestartNever, Retry{Backoff: 2 * time.Second, MaxBackoff: 5 * time.Second, HealthyAfter: 30 * time.Second}, &Needs{Network: true}},
		{DefaultRestart, Retry{Backoff: time.Hour, MaxBackoff: time.Hour, HealthyAfter: DefaultHealthyAfter, CrashLoop: profile.CrashLoop}, nil},
		{DefaultRestart, profile, &Needs{Network: true, TCP: []string{"relay.example:443", "127.0.0.1:9", "[::1]:80"}}},
	}
	for i, w := range want {
		a := cfg.Agents[i]
		if a.Restart != w.policy || a.Retry != w.retry || !reflect.DeepEqual(a.Needs, w.needs) {
			t.Errorf("%s: %s %+v %+v, want %s %+v %+v", a.ID, a.Restart, a.Retry, a.Needs, w.policy, w.retry, w.needs)
		}
	}
	// No default parks an agent.
	if d := DefaultRetry(); d.CrashLoop.Failures != 0 {
		t.Errorf("the default crash loop parks: %+v", d)
	}
}

func TestRestartAndNeedsErrors(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		line       int
		key, msg   string
	}{
		{"profile restart is a scalar", "restart: always\nagents: []\n", 1, "restart", "must be a mapping"},
		{"unknown key", "agents:\n  - id: a\n    command: [x]\n    restart: {policy: always, retries: 3}\n", 4, "agents[0].restart.retries", "unknown key"},
		{"bad policy", "agents:\n  - id: a\n    command: [x]\n    restart:\n      policy: sometimes\n", 5, "agents[0].restart.policy", "not one of"},
		{"bad backoff", "agents:\n  - id: a\n    command: [x]\n    restart: {backoff: soon}\n", 4, "agents[0].restart.backoff", "not a duration"},
		{"max below first", "restart:\n  backoff: 10s\n  max_backoff: 1s\nagents: []\n", 3, "restart.max_backoff", "less than backoff"},
		{"max below the profile's first", "restart: {backoff: 10s}\nagents:\n  - id: a\n    command: [x]\n    restart:\n      max_backoff: 1s\n", 6, "agents[0].restart.max_backoff", "less than backoff"},
		{"crash loop without within", "agents:\n  - id: a\n    command: [x]\n    restart:\n      crash_loop: {failures: 3}\n", 5, "agents[0].restart.crash_loop.within", "missing"},
		{"crash loop zero", "agents:\n  - id: a\n    command: [x]\n    restart:\n      crash_loop: {failures: 0, within: 1m}\n", 5, "agents[0].restart.crash_loop.failures", ""},
		{"crash loop word", "agents:\n  - id: a\n    command: [x]\n    restart:\n      crash_loop: always\n", 5, "agents[0].restart.crash_loop", "never"},
		{"needs word", "agents:\n  - id: a\n    command: [x]\n    needs: internet\n", 4, "agents[0].needs", "network"},
		{"needs bad port", "agents:\n  - id: a\n    command: [x]\n    needs:\n      - network\n      - {tcp: \"relay:https\"}\n", 6, "agents[0].needs[1].tcp", "host:port"},
		{"needs no host", "agents:\n  - id: a\n    command: [x]\n    needs: {tcp: \":443\"}\n", 4, "agents[0].needs.tcp", "host:port"},
		{"needs unknown kind", "agents:\n  - id: a\n    command: [x]\n    needs: {udp: \"x:1\"}\n", 4, "agents[0].needs.udp", "unknown key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("agents.yaml", []byte(tt.yaml))
			got := problems(t, err)
			if len(got) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(got), err)
			}
			g := got[0]
			if !strings.HasSuffix(g.File, "agents.yaml") || g.Line != tt.line || g.Key != tt.key || !strings.Contains(g.Msg, tt.msg) {
				t.Errorf("got %s:%d %q %q, want line %d key %q mentioning %q", g.File, g.Line, g.Key, g.Msg, tt.line, tt.key, tt.msg)
			}
		})
	}
}
