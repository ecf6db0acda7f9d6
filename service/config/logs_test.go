package config

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/logfile"
)

// The top-level logs is every agent's default; an agent's own logs wins
// key by key; without either, Logs is nil and the fingerprint is as it
// was before logs existed.
func TestLogs(t *testing.T) {
	src := `logs: {max_size: 256KiB, keep: 3}
agents:
  - id: a
    command: [x]
  - id: b
    command: [x]
    logs: {keep: 0, timestamps: false}
  - id: c
    command: [x]
    logs: {max_size: 2MB}
`
	cfg, err := Parse("agents.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []logfile.Policy{
		{MaxSize: 256 << 10, Keep: 3, Timestamps: true},
		{MaxSize: 256 << 10, Keep: 0, Timestamps: false},
		{MaxSize: 2e6, Keep: 3, Timestamps: true},
	}
	for i, w := range want {
		if got := cfg.Agents[i].Logs; got == nil || *got != w {
			t.Errorf("%s: logs %+v, want %+v", cfg.Agents[i].ID, got, w)
		}
	}
	plain, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Agents[0].Logs != nil {
		t.Errorf("logs %+v without a logs section, want nil", plain.Agents[0].Logs)
	}
	if fp := plain.Agents[0].Fingerprint(); strings.Contains(fp, "Logs") || fp == cfg.Agents[0].Fingerprint() {
		t.Error("the fingerprint does not follow logs")
	}
}

// Bad values name the file, the line and the key.
func TestLogsErrors(t *testing.T) {
	for _, c := range []struct{ section, key, want string }{
		{"{max_size: 10 parsecs}", "agents[0].logs.max_size", "not a size"},
		{"{max_size: 1KiB}", "agents[0].logs.max_size", "less than the minimum of 4096 bytes"},
		{"{max_size: 2048GiB}", "agents[0].logs.max_size", "more than the limit"},
		{"{keep: -1}", "agents[0].logs.keep", "not a whole number from 0 to 1000"},
		{"{keep: many}", "agents[0].logs.keep", "not a whole number"},
		{"{timestamps: sometimes}", "agents[0].logs.timestamps", "not true or false"},
		{"{rotate: daily}", "agents[0].logs.rotate", "unknown key"},
		{"10MiB", "agents[0].logs", "must be a mapping"},
	} {
		_, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n    logs: "+c.section+"\n"))
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].File != "agents.yaml" || ps[0].Line != 4 || ps[0].Key != c.key || !strings.Contains(ps[0].Msg, c.want) {
			t.Errorf("logs: %s: %v, want one problem of agents.yaml line 4, key %s, saying %q", c.section, err, c.key, c.want)
		}
	}
	_, err := Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\nlogs:\n  keep: 5000\n"))
	if ps := problems(t, err); len(ps) != 1 || ps[0].Line != 5 || ps[0].Key != "logs.keep" {
		t.Errorf("top-level keep 5000: %v", err)
	}
}
