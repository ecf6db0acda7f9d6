package config

import (
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
)

// A config read back from its parsed form is the config parsed, and the
// configs compared set every field of an agent, so a field that the
// form would lose (of a type JSON cannot carry whole) is seen here.
func TestParsedFormRoundTrip(t *testing.T) {
	dir := testdir.Temp(t)
	envFile := write(t, dir, "ollama.env", "TOKEN=x\n", 0o600)
	text := `agents:
  - id: ollama
    command: [ollama, serve]
    dir: /srv/ollama
    env: {A: "1", EMPTY: }
    env_file: ` + strconv.Quote(envFile) + `
    autostart: true
    restart: always
    stop_timeout: 1m30s
    ready: {http: "http://127.0.0.1:11434/"}
    start_timeout: 2m
    health: {tcp: "127.0.0.1:11434", every: 5s, timeout: 500ms, failures: 2}
    survive_service_crash: 30s
  - id: relay
    identity: relay@local
    command: [relay]
    ready: {log: "listening on \\d+"}
    health: {exec: [true, --quiet]}
  - id: alice
    command: [goose, acp]
    ready: {exec: [check-it, --quiet]}
    requires: [ollama]
    after: [relay]
`
	if runtime.GOOS != "windows" {
		text += `  - id: redis
    command: [redis-server, --supervised, systemd]
    ready: notify
    watchdog: 30s
  - id: fd
    command: [s6-style]
    ready: {fd: 5}
`
	}
	cfg, err := Parse(filepath.Join(dir, "agents.yaml"), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	form, err := cfg.ParsedForm()
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromParsedForm(cfg.Path, cfg.Source, form)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Errorf("read back from the parsed form:\n got %+v\nwant %+v", got, cfg)
	}
	// Every field of Agent is set in some agent above (a watchdog needs
	// notify readiness, which Windows refuses).
	typ := reflect.TypeFor[Agent]()
	for i := range typ.NumField() {
		if runtime.GOOS == "windows" && typ.Field(i).Name == "Watchdog" {
			continue
		}
		set := false
		for _, a := range cfg.Agents {
			set = set || !reflect.ValueOf(a).Field(i).IsZero()
		}
		if !set {
			t.Errorf("no agent of the test sets %s: add it, to see that the parsed form carries it", typ.Field(i).Name)
		}
	}
	if _, err := FromParsedForm(cfg.Path, cfg.Source, []byte(`[{"ID": 3}]`)); err == nil {
		t.Error("a parsed form that does not decode was taken")
	}
}
