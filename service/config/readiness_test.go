package config

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/probe"
)

func TestParseReadiness(t *testing.T) {
	text := `agents:
  - id: ollama
    command: [ollama, serve]
    ready: {http: "http://127.0.0.1:11434/"}
    start_timeout: 2m
    health: {tcp: "127.0.0.1:11434", every: 5s, timeout: 500ms, failures: 2}
  - id: relay
    command: [relay]
    ready: {log: "listening on \\d+"}
  - id: alice
    command: [goose, acp]
    ready: {exec: [check-it, --quiet]}
    requires: [ollama]
    after: [relay]
  - id: probed
    command: [probed]
    health: {exec: [true]}
`
	if runtime.GOOS != "windows" {
		text += `  - id: fd
    command: [s6-style]
    ready: {fd: 5}
  - id: redis
    command: [redis-server, --supervised, systemd]
    ready: notify
    watchdog: 30s
`
	}
	cfg, err := Parse("agents.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Agent{}
	for _, a := range cfg.Agents {
		by[a.ID] = a
	}
	o := by["ollama"]
	if !reflect.DeepEqual(*o.Ready, probe.Spec{Kind: probe.KindHTTP, URL: "http://127.0.0.1:11434/"}) || o.StartTimeout != 2*time.Minute {
		t.Errorf("ollama: ready %+v, start_timeout %v", o.Ready, o.StartTimeout)
	}
	if want := (&Health{Check: probe.Spec{Kind: probe.KindTCP, Addr: "127.0.0.1:11434"}, Every: 5 * time.Second, Timeout: 500 * time.Millisecond, Failures: 2}); !reflect.DeepEqual(o.Health, want) {
		t.Errorf("ollama health %+v, want %+v", o.Health, want)
	}
	if r := by["relay"].Ready; r.Kind != probe.KindLog || r.Pattern != `listening on \d+` {
		t.Errorf("relay ready %+v", r)
	}
	a := by["alice"]
	if !reflect.DeepEqual(a.Ready.Argv, []string{"check-it", "--quiet"}) || !reflect.DeepEqual(a.Requires, []string{"ollama"}) ||
		!reflect.DeepEqual(a.After, []string{"relay"}) || !reflect.DeepEqual(a.Deps(), []string{"ollama", "relay"}) {
		t.Errorf("alice: %+v", a)
	}
	if h := by["probed"].Health; h.Every != DefaultHealthEvery || h.Timeout != DefaultHealthTimeout || h.Failures != DefaultHealthFails {
		t.Errorf("health defaults %+v", h)
	}
	if runtime.GOOS != "windows" {
		if f := by["fd"]; f.Ready.Kind != probe.KindFD || f.Ready.FD != 5 {
			t.Errorf("fd ready %+v", f.Ready)
		}
		if r := by["redis"]; r.Ready.Kind != probe.KindNotify || r.Watchdog != 30*time.Second {
			t.Errorf("redis: %+v", r)
		}
	}
}

func TestReadinessErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"unknown kind", `agents:
  - id: a
    command: [x]
    ready: {pigeon: yes}
`, 4, "agents[0].ready.pigeon", "unknown kind of check"},
		{"scalar kind", `agents:
  - id: a
    command: [x]
    ready: http
`, 4, "agents[0].ready", "is not a check"},
		{"bad url", `agents:
  - id: a
    command: [x]
    ready: {http: "127.0.0.1:80"}
`, 4, "agents[0].ready.http", "not an http:// or https:// URL"},
		{"bad regexp", `agents:
  - id: a
    command: [x]
    ready:
      log: "("
`, 5, "agents[0].ready.log", "not a regular expression"},
		{"low fd", `agents:
  - id: a
    command: [x]
    ready: {fd: 1}
`, 4, "agents[0].ready.fd", "descriptor 1"},
		{"two kinds", `agents:
  - id: a
    command: [x]
    ready: {tcp: "a:1", http: "http://a/"}
`, 4, "agents[0].ready", "exactly one kind"},
		{"watchdog without notify", `agents:
  - id: a
    command: [x]
    watchdog: 10s
`, 4, "agents[0].watchdog", "needs ready: notify"},
		{"watchdog with http", `agents:
  - id: a
    command: [x]
    ready: {http: "http://a/"}
    watchdog: 10s
`, 5, "agents[0].watchdog", "not ready: http"},
		{"bad start_timeout", `agents:
  - id: a
    command: [x]
    start_timeout: soon
`, 4, "agents[0].start_timeout", "not a duration"},
		{"health log", `agents:
  - id: a
    command: [x]
    health: {log: "x"}
`, 4, "agents[0].health.log", "unknown key"},
		{"health timeout past every", `agents:
  - id: a
    command: [x]
    health: {tcp: "a:1", every: 1s, timeout: 2s}
`, 4, "agents[0].health.timeout", "longer than every"},
		{"health failures", `agents:
  - id: a
    command: [x]
    health: {tcp: "a:1", failures: 0}
`, 4, "agents[0].health.failures", "whole number from 1"},
		{"unknown dependency", `agents:
  - id: a
    command: [x]
    requires: [b]
`, 4, "agents[0].requires[0]", `"b" is not the id of an agent`},
		{"self", `agents:
  - id: a
    command: [x]
    after:
      - a
`, 5, "agents[0].after[0]", "names the agent itself"},
		{"after as a string", `agents:
  - id: a
    command: [x]
    after: b
`, 4, "agents[0].after", "must be a list"},
		{"cycle", `agents:
  - id: a
    command: [x]
    requires: [b]
  - id: b
    command: [x]
    after: [c]
  - id: c
    command: [x]
    requires:
      - a
`, 11, "agents[2].requires[0]", "makes a cycle: a -> b -> c -> a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.text, "fd:") && runtime.GOOS == "windows" {
				t.Skip("fd is refused as a whole on Windows (TestNotifyRefusedOnWindows)")
			}
			_, err := Parse("agents.yaml", []byte(c.text))
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("%d problems, want 1: %v", len(ps), err)
			}
			p := ps[0]
			if p.File != "agents.yaml" || p.Line != c.line || p.Key != c.key || !strings.Contains(p.Msg, c.msg) {
				t.Fatalf("problem %s:%d %s: %s\nwant line %d, key %s, message with %q", p.File, p.Line, p.Key, p.Msg, c.line, c.key, c.msg)
			}
		})
	}
}

func TestNotifyRefusedOnWindows(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Skip("notify is refused only where there are no unix datagram sockets")
	}
	for _, ready := range []string{"notify", "{fd: 3}"} {
		_, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n    ready: "+ready+"\n"))
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Line != 4 || !strings.Contains(ps[0].Msg, "Windows") {
			t.Fatalf("ready: %s on Windows: %v", ready, err)
		}
	}
}
