package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
)

// want is one expected problem. File is "cfg" for the config file, or the
// name of a file in the test's directory; msg, when set, must appear in the
// message (to check a hint or the other line of a duplicate).
type want struct {
	file string
	line int
	key  string
	msg  string
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", 4096)
	tests := []struct {
		name  string
		yaml  string
		files map[string]string // extra files, 0600, in the test dir
		want  []want
	}{
		// YAML itself.
		{"malformed mapping", "agents:\n  - id: a\n    command: [x, y]\n  - id: b\n    command: x: y\n",
			nil, []want{{"cfg", 5, "", "invalid YAML"}}},
		{"unclosed flow list", "agents:\n  - id: a\n    command: [x, y\n  - id: b\n",
			nil, []want{{"cfg", 3, "", "invalid YAML"}}},
		{"unclosed flow list before more agents", "agents:\n  - id: a\n    command: [x, y\n\n  - id: b\n    command: [z]\n",
			nil, []want{{"cfg", 3, "", "invalid YAML"}}},
		{"tab in the indentation", "agents:\n  - id: a\n\tcommand: [x]\n",
			nil, []want{{"cfg", 3, "", "tab character"}}},
		{"tab starting a line", "agents:\n  - id: a\n    command: [x]\n\t- id: b\n",
			nil, []want{{"cfg", 4, "", "invalid YAML"}}},
		{"key indented too little", "agents:\n  - id: a\n   command: [x]\n",
			nil, []want{{"cfg", 3, "", "invalid YAML"}}},
		{"fault on the first line", "\tagents: []\n", nil, []want{{"cfg", 1, "", "invalid YAML"}}},
		{"not UTF-8", "agents:\n  - id: a\n    command: [\xff]\n", nil, []want{{"cfg", 3, "", "UTF-8"}}},
		{"second document", "agents: []\n---\nagents: []\n",
			nil, []want{{"cfg", 3, "", "second YAML document"}}},
		{"empty second document", "agents: []\n---\n\n", nil, []want{{"cfg", 2, "", "second YAML document"}}},
		{"root is a list", "- id: a\n", nil, []want{{"cfg", 1, "", ""}}},
		{"root is a scalar", "hello\n", nil, []want{{"cfg", 1, "", ""}}},
		{"agents is a mapping", "agents:\n  id: a\n", nil, []want{{"cfg", 2, "agents", ""}}},
		{"agent is a scalar", "agents:\n  - a\n", nil, []want{{"cfg", 2, "agents[0]", ""}}},
		{"duplicate mapping key", "agents:\n  - id: a\n    command: [x]\n    id: b\n",
			nil, []want{{"cfg", 4, "agents[0].id", "line 2"}}},
		{"duplicate top-level key", "agents: []\nagents: []\n", nil, []want{{"cfg", 2, "agents", "line 1"}}},
		{"empty key", "agents:\n  - id: a\n    command: [x]\n    \"\": 1\n", nil, []want{{"cfg", 4, "agents[0]", "not empty"}}},
		{"empty top-level key", "?\n", nil, []want{{"cfg", 1, "", "not empty"}}},

		// Unknown keys.
		{"unknown agent key", "agents:\n  - id: a\n    command: [x]\n    restrat: never\n",
			nil, []want{{"cfg", 4, "agents[0].restrat", `did you mean "restart"?`}}},
		{"unknown agent key far from any", "agents:\n  - id: a\n    command: [x]\n    colour: red\n",
			nil, []want{{"cfg", 4, "agents[0].colour", "unknown key (an agent has"}}},
		{"unknown key in second agent", "agents:\n  - id: a\n    command: [x]\n  - id: b\n    command: [x]\n    auto_start: true\n",
			nil, []want{{"cfg", 6, "agents[1].auto_start", ""}}},
		{"unknown top-level key", "agent:\n  - id: a\n", nil, []want{{"cfg", 1, "agent", `did you mean "agents"?`}}},

		// Wrong types.
		{"autostart not bool", "agents:\n  - id: a\n    command: [x]\n    autostart: maybe\n",
			nil, []want{{"cfg", 4, "agents[0].autostart", ""}}},
		{"autostart a list", "agents:\n  - id: a\n    command: [x]\n    autostart: [true]\n",
			nil, []want{{"cfg", 4, "agents[0].autostart", ""}}},
		{"command a mapping", "agents:\n  - id: a\n    command: {a: b}\n",
			nil, []want{{"cfg", 3, "agents[0].command", ""}}},
		{"command a string", "agents:\n  - id: a\n    command: goose acp\n",
			nil, []want{{"cfg", 3, "agents[0].command", "without a shell"}}},
		{"command item a list", "agents:\n  - id: a\n    command: [x, [y]]\n",
			nil, []want{{"cfg", 3, "agents[0].command[1]", ""}}},
		{"env a list", "agents:\n  - id: a\n    command: [x]\n    env: [A=b]\n",
			nil, []want{{"cfg", 4, "agents[0].env", ""}}},
		{"id a list", "agents:\n  - id: [a]\n    command: [x]\n",
			nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"dir a mapping", "agents:\n  - id: a\n    command: [x]\n    dir: {a: b}\n",
			nil, []want{{"cfg", 4, "agents[0].dir", ""}}},

		// id.
		{"id missing", "agents:\n  - command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", "missing"}}},
		{"id empty", "agents:\n  - id: \"\"\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id null", "agents:\n  - id:\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id traversal", "agents:\n  - id: ../x\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", "not a valid id"}}},
		{"id slash", "agents:\n  - id: a/b\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id leading dot", "agents:\n  - id: .a\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id NUL", "agents:\n  - id: \"a\\0b\"\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id space", "agents:\n  - id: a b\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},
		{"id 4 KB", "agents:\n  - id: " + long + "\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", "4096 bytes"}}},
		{"id 129 bytes", "agents:\n  - id: " + long[:129] + "\n    command: [x]\n", nil, []want{{"cfg", 2, "agents[0].id", ""}}},

		// identity.
		{"identity empty", "agents:\n  - id: a\n    identity: \"\"\n    command: [x]\n", nil, []want{{"cfg", 3, "agents[0].identity", ""}}},
		{"identity too long", "agents:\n  - id: a\n    identity: " + long[:257] + "\n    command: [x]\n", nil, []want{{"cfg", 3, "agents[0].identity", ""}}},
		{"identity control char", "agents:\n  - id: a\n    identity: \"a\\tb\"\n    command: [x]\n", nil, []want{{"cfg", 3, "agents[0].identity", ""}}},
		{"identity NUL", "agents:\n  - id: a\n    identity: \"a\\0b\"\n    command: [x]\n", nil, []want{{"cfg", 3, "agents[0].identity", ""}}},
		{"identity a mapping", "agents:\n  - id: a\n    identity: {a: b}\n    command: [x]\n", nil, []want{{"cfg", 3, "agents[0].identity", ""}}},

		// Duplicates name both lines.
		{"duplicate id", "agents:\n  - id: a\n    identity: one\n    command: [x]\n  - id: a\n    identity: two\n    command: [x]\n",
			nil, []want{{"cfg", 5, "agents[1].id", "line 2"}}},
		{"duplicate identity", "agents:\n  - id: a\n    identity: same\n    command: [x]\n  - id: b\n    identity: same\n    command: [x]\n",
			nil, []want{{"cfg", 6, "agents[1].identity", "line 3"}}},
		{"identity defaulted from id clashes", "agents:\n  - id: a\n    identity: b\n    command: [x]\n  - id: b\n    command: [x]\n",
			nil, []want{{"cfg", 5, "agents[1].identity", "line 3"}}},
		{"duplicate id and defaulted identity", "agents:\n  - id: a\n    command: [x]\n  - id: a\n    command: [x]\n",
			nil, []want{{"cfg", 4, "agents[1].id", "line 2"}, {"cfg", 4, "agents[1].identity", "line 2"}}},

		// command.
		{"command missing", "agents:\n  - id: a\n", nil, []want{{"cfg", 2, "agents[0].command", "missing"}}},
		{"command null", "agents:\n  - id: a\n    command:\n", nil, []want{{"cfg", 2, "agents[0].command", "missing"}}},
		{"command empty", "agents:\n  - id: a\n    command: []\n", nil, []want{{"cfg", 3, "agents[0].command", ""}}},
		{"command empty argv0", "agents:\n  - id: a\n    command: [\"\", x]\n", nil, []want{{"cfg", 3, "agents[0].command[0]", ""}}},
		{"command NUL", "agents:\n  - id: a\n    command: [x, \"a\\0\"]\n", nil, []want{{"cfg", 3, "agents[0].command[1]", "NUL"}}},

		// stop_timeout.
		{"duration without unit", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: 5\n", nil, []want{{"cfg", 4, "agents[0].stop_timeout", "unit"}}},
		{"duration garbage", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: soon\n", nil, []want{{"cfg", 4, "agents[0].stop_timeout", ""}}},
		{"duration zero", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: 0s\n", nil, []want{{"cfg", 4, "agents[0].stop_timeout", ""}}},
		{"duration negative", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: -1s\n", nil, []want{{"cfg", 4, "agents[0].stop_timeout", ""}}},
		{"duration over 1h", "agents:\n  - id: a\n    command: [x]\n    stop_timeout: 61m\n", nil, []want{{"cfg", 4, "agents[0].stop_timeout", "1h"}}},

		// restart.
		{"restart unknown", "agents:\n  - id: a\n    command: [x]\n    restart: sometimes\n",
			nil, []want{{"cfg", 4, "agents[0].restart", `"sometimes" is not one of never, on-failure, always`}}},
		{"restart empty string", "agents:\n  - id: a\n    command: [x]\n    restart: \"\"\n", nil, []want{{"cfg", 4, "agents[0].restart", ""}}},
		{"restart wrong case", "agents:\n  - id: a\n    command: [x]\n    restart: Always\n", nil, []want{{"cfg", 4, "agents[0].restart", ""}}},

		// env.
		{"env key starts with digit", "agents:\n  - id: a\n    command: [x]\n    env:\n      1A: b\n", nil, []want{{"cfg", 5, "agents[0].env.1A", ""}}},
		{"env key with dash", "agents:\n  - id: a\n    command: [x]\n    env:\n      A-B: b\n", nil, []want{{"cfg", 5, "agents[0].env.A-B", ""}}},
		{"env key with =", "agents:\n  - id: a\n    command: [x]\n    env:\n      \"A=B\": b\n", nil, []want{{"cfg", 5, "agents[0].env.A=B", ""}}},
		{"env value NUL", "agents:\n  - id: a\n    command: [x]\n    env:\n      A: \"x\\0y\"\n", nil, []want{{"cfg", 5, "agents[0].env.A", "NUL"}}},
		{"env value a list", "agents:\n  - id: a\n    command: [x]\n    env:\n      A: [1]\n", nil, []want{{"cfg", 5, "agents[0].env.A", ""}}},
		{"env key twice", "agents:\n  - id: a\n    command: [x]\n    env:\n      A: 1\n      A: 2\n", nil, []want{{"cfg", 6, "agents[0].env.A", "line 5"}}},

		// env_file.
		{"env_file missing", "agents:\n  - id: a\n    command: [x]\n    env_file: {{dir}}/nope.env\n",
			nil, []want{{"cfg", 4, "agents[0].env_file", "nope.env"}}},
		{"env_file a directory", "agents:\n  - id: a\n    command: [x]\n    env_file: {{dir}}\n",
			nil, []want{{"cfg", 4, "agents[0].env_file", "not a regular file"}}},
		{"env_file relative and missing", "agents:\n  - id: a\n    command: [x]\n    env_file: nope.env\n",
			nil, []want{{"cfg", 4, "agents[0].env_file", ""}}},
		{"env_file ~user", "agents:\n  - id: a\n    command: [x]\n    env_file: ~alice/a.env\n",
			nil, []want{{"cfg", 4, "agents[0].env_file", ""}}},
		{"env_file bad line", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n",
			map[string]string{"a.env": "# secrets\nA=1\n\nthis is not a pair\n"}, []want{{"a.env", 4, "agents[0].env_file", "KEY=VALUE"}}},
		{"env_file bad name", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n",
			map[string]string{"a.env": "A=1\n2B=2\n"}, []want{{"a.env", 2, "agents[0].env_file", ""}}},
		{"env_file unclosed quote", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n",
			map[string]string{"a.env": "A=\"1\n"}, []want{{"a.env", 1, "agents[0].env_file", ""}}},
		{"env_file mismatched quotes", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n",
			map[string]string{"a.env": "\n\nA='1\"\n"}, []want{{"a.env", 3, "agents[0].env_file", ""}}},
		{"env_file NUL value", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n",
			map[string]string{"a.env": "A=x\x00y\n"}, []want{{"a.env", 1, "agents[0].env_file", "NUL"}}},

		// secrets.
		{"secret a plain value", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      TOKEN: hunter2\n", nil, []want{{"cfg", 5, "agents[0].secrets.TOKEN", "never written in the config"}}},
		{"secret bad name", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      1T: {keyring: k}\n", nil, []want{{"cfg", 5, "agents[0].secrets.1T", "variable name"}}},
		{"secret also in env", "agents:\n  - id: a\n    command: [x]\n    env: {T: x}\n    secrets:\n      T: {keyring: k}\n", nil, []want{{"cfg", 6, "agents[0].secrets.T", "env too"}}},
		{"secret two kinds", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      T: {keyring: k, exec: [x]}\n", nil, []want{{"cfg", 5, "agents[0].secrets.T", "exactly one"}}},
		{"secret unknown kind", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      T:\n        vault: k\n", nil, []want{{"cfg", 6, "agents[0].secrets.T.vault", "keyring"}}},
		{"secret empty keyring", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      T: {keyring: \"\"}\n", nil, []want{{"cfg", 5, "agents[0].secrets.T.keyring", "keychain entry"}}},
		{"secret keyring too long", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      T: {keyring: " + strings.Repeat("k", 129) + "}\n", nil, []want{{"cfg", 5, "agents[0].secrets.T.keyring", "128"}}},
		{"secret exec a string", "agents:\n  - id: a\n    command: [x]\n    secrets:\n      T: {exec: \"op read x\"}\n", nil, []want{{"cfg", 5, "agents[0].secrets.T.exec", "without a shell"}}},
		{"secrets a list", "agents:\n  - id: a\n    command: [x]\n    secrets: [T]\n", nil, []want{{"cfg", 4, "agents[0].secrets", "mapping"}}},

		// Several at once, reported in line order.
		{"several", "agents:\n  - id: ../x\n    command: [x]\n    restart: sometimes\n  - id: b\n    stop_timeout: 0s\nextra: 1\n",
			nil, []want{
				{"cfg", 2, "agents[0].id", ""},
				{"cfg", 4, "agents[0].restart", ""},
				{"cfg", 5, "agents[1].command", ""},
				{"cfg", 6, "agents[1].stop_timeout", ""},
				{"cfg", 7, "extra", ""},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testdir.Temp(t)
			for name, text := range tt.files {
				write(t, dir, name, text, 0o600)
			}
			path := write(t, dir, "agents.yaml", expand(tt.yaml, dir), 0o600)
			cfg, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a config along with %v", err)
			}
			got := problems(t, err)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(got), len(tt.want), err)
			}
			// One problem comes back as *Error, several as Errors.
			var es Errors
			if isMany := errors.As(err, &es); isMany != (len(tt.want) > 1) {
				t.Errorf("err is %T for %d problems", err, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				wantFile := path
				if w.file != "cfg" {
					wantFile = filepath.Join(dir, w.file)
				}
				if g.File != wantFile || g.Line != w.line || g.Key != w.key {
					t.Errorf("problem %d = {File: %s, Line: %d, Key: %q}, want {%s, %d, %q}\n(%v)", i, g.File, g.Line, g.Key, wantFile, w.line, w.key, g)
				}
				if w.msg != "" && !strings.Contains(g.Msg, w.msg) {
					t.Errorf("problem %d: message %q does not mention %q", i, g.Msg, w.msg)
				}
				if g.Msg == "" {
					t.Errorf("problem %d has no message", i)
				}
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{File: "agents.yaml", Line: 12, Key: "agents[1].restart", Msg: `"sometimes" is not one of never, on-failure, always`}
	if got, want := e.Error(), `agents.yaml:12: agents[1].restart: "sometimes" is not one of never, on-failure, always`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		e    *Error
		want string
	}{
		{&Error{File: "f", Msg: "m"}, "f: m"},
		{&Error{Line: 3, Key: "k", Msg: "m"}, "line 3: k: m"},
		{&Error{Msg: "m"}, "m"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	es := Errors{e, {File: "f", Msg: "m", Err: fs.ErrPermission}}
	if !errors.Is(es, fs.ErrPermission) {
		t.Error("Errors does not unwrap to its causes")
	}
	var first *Error
	if !errors.As(fmt.Errorf("wrapped: %w", es), &first) || first != e {
		t.Error("errors.As does not find the first *Error through Errors")
	}
}

func TestParseAgent(t *testing.T) {
	home := testdir.Temp(t)
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home) // os.UserHomeDir on Windows
	dir := testdir.Temp(t)
	write(t, dir, "alice.env", "TOKEN=x\n", 0o600)
	write(t, home, "h.env", "TOKEN=y\n", 0o600)
	text := `# a comment
agents:
  - id: alice
    identity: alice@relay
    command: [goose, acp, --port, 8080, true]
    dir: ~/agents/alice
    env: {LOG_LEVEL: info, N: 3, EMPTY: }
    env_file: alice.env
    autostart: true
    restart: always
    stop_timeout: 1m30s

  - id: bob
    command: [tether, demo-agent]
    dir: rel/bob
    env_file: ~/h.env
  - id: c.d_e@f-1
    command: [x]
    restart: never
    stop_timeout: 1h
    autostart: false
`
	path := write(t, dir, "agents.yaml", text, 0o600)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != path {
		t.Errorf("Path = %q, want %q", cfg.Path, path)
	}
	want := []Agent{{
		ID: "alice", Identity: "alice@relay",
		Command:     []string{"goose", "acp", "--port", "8080", "true"},
		Dir:         filepath.Join(home, "agents", "alice"),
		Env:         map[string]string{"LOG_LEVEL": "info", "N": "3", "EMPTY": ""},
		EnvFile:     filepath.Join(dir, "alice.env"),
		Autostart:   true,
		Restart:     api.RestartAlways,
		Retry:       DefaultRetry(),
		StopTimeout: 90 * time.Second,
		Line:        3,
	}, {
		ID: "bob", Identity: "bob",
		Command:     []string{"tether", "demo-agent"},
		Dir:         filepath.Join(dir, "rel", "bob"),
		EnvFile:     filepath.Join(home, "h.env"),
		Restart:     api.RestartOnFailure,
		Retry:       DefaultRetry(),
		StopTimeout: 5 * time.Second,
		Line:        13,
	}, {
		ID: "c.d_e@f-1", Identity: "c.d_e@f-1",
		Command:     []string{"x"},
		Restart:     api.RestartNever,
		Retry:       DefaultRetry(),
		StopTimeout: time.Hour,
		Line:        17,
	}}
	if !reflect.DeepEqual(cfg.Agents, want) {
		t.Errorf("agents:\n got %+v\nwant %+v", cfg.Agents, want)
	}
}

func TestParseAnchorsAndMerges(t *testing.T) {
	text := `agents:
  - &base
    id: a
    command: [x]
    env: &env {A: "1", B: "2"}
    restart: always
  - <<: *base
    id: b
    identity: b
    env:
      <<: *env
      B: "3"
  - id: c
    command: [y]
    env: *env
`
	cfg, err := Parse("", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 3 {
		t.Fatalf("got %d agents", len(cfg.Agents))
	}
	b := cfg.Agents[1]
	if b.ID != "b" || b.Restart != api.RestartAlways || !reflect.DeepEqual(b.Command, []string{"x"}) ||
		!reflect.DeepEqual(b.Env, map[string]string{"A": "1", "B": "3"}) {
		t.Errorf("merged agent = %+v", b)
	}
	if c := cfg.Agents[2]; !reflect.DeepEqual(c.Env, map[string]string{"A": "1", "B": "2"}) {
		t.Errorf("aliased env = %v", c.Env)
	}

	// A merge that refers to itself stops, with an error.
	_, err = Parse("", []byte("agents:\n  - &a\n    <<: *a\n    id: x\n    command: [x]\n"))
	if p := problems(t, err); len(p) != 1 || p[0].Line != 3 || p[0].Key != "agents[0]" {
		t.Errorf("self-merge: %v", err)
	}
}

func TestEmptyConfigs(t *testing.T) {
	for _, text := range []string{"", "\n", "# nothing yet\n", "agents:\n", "agents: []\n", "{}\n", "---\n", "~\n"} {
		cfg, err := Parse("agents.yaml", []byte(text))
		if err != nil {
			t.Errorf("%q: %v", text, err)
			continue
		}
		if len(cfg.Agents) != 0 {
			t.Errorf("%q: %d agents", text, len(cfg.Agents))
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg, err := Parse("default.yaml", Default())
	if err != nil {
		t.Fatalf("the default config does not validate: %v", err)
	}
	want := []Agent{{
		ID: "demo", Identity: "demo@local",
		Command:     []string{"tether", "demo-agent"},
		Autostart:   true,
		Restart:     api.RestartOnFailure,
		Retry:       DefaultRetry(),
		StopTimeout: 5 * time.Second,
		Line:        cfg.Agents[0].Line,
	}}
	if !reflect.DeepEqual(cfg.Agents, want) {
		t.Errorf("default agents = %+v, want %+v", cfg.Agents, want)
	}
	if line := bytes.Split(Default(), []byte("\n"))[cfg.Agents[0].Line-1]; !bytes.Contains(line, []byte("id: demo")) {
		t.Errorf("Line %d is %q, not the agent's entry", cfg.Agents[0].Line, line)
	}
	// Every field is explained for the user who edits it.
	for _, key := range agentKeys {
		if !bytes.Contains(Default(), []byte("# "+key+" ")) {
			t.Errorf("the default config does not explain %s", key)
		}
	}
	for _, key := range restartKeys {
		if !bytes.Contains(Default(), []byte("#   "+key+" ")) {
			t.Errorf("the default config does not explain restart's %s", key)
		}
	}
	// Default hands out a copy.
	d := Default()
	d[0] = 'X'
	if Default()[0] == 'X' {
		t.Error("Default exposes the embedded bytes")
	}
}

// example is the example of key that the default config gives, commented
// out at indent, uncommented: its line and the deeper lines under it.
func example(t *testing.T, indent, key string) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(string(Default()), "\n") {
		switch {
		case strings.HasPrefix(line, indent+"# "+key+":"):
			if out != nil {
				t.Fatalf("the default config gives two examples of %s", key)
			}
			out = []string{indent + strings.TrimPrefix(line, indent+"# ")}
		case out != nil && strings.HasPrefix(line, indent+"#   "):
			out = append(out, indent+"  "+strings.TrimPrefix(line, indent+"#   "))
		case out != nil:
			return strings.Join(out, "\n") + "\n"
		}
	}
	if out == nil {
		t.Fatalf("the default config gives no example of %s", key)
	}
	return strings.Join(out, "\n") + "\n"
}

// The default config's examples of the keys of a long day (restart's
// numbers, needs, logs, secrets, for an agent and for every agent) are
// valid as written, and say what they seem to; each is explained.
func TestDefaultConfigExamples(t *testing.T) {
	agent := "agents:\n  - id: demo\n    command: [tether, demo-agent]\n"
	parse := func(top, own string) Agent {
		t.Helper()
		src := agent + own + top
		cfg, err := Parse("default.yaml", []byte(src))
		if err != nil {
			t.Fatalf("the example does not parse: %v\n%s", err, src)
		}
		return cfg.Agents[0]
	}
	if a := parse("", example(t, "    ", keyRestart)); a.Restart != api.RestartAlways || a.Retry.MaxBackoff != 5*time.Minute || a.Retry.CrashLoop != (CrashLoop{Failures: 5, Within: 10 * time.Minute}) {
		t.Errorf("an agent's restart example: %+v %+v", a.Restart, a.Retry)
	}
	if a := parse(example(t, "", keyRestart), ""); a.Retry != DefaultRetry() {
		t.Errorf("the top restart example, the defaults written out: %+v, want %+v", a.Retry, DefaultRetry())
	}
	if a := parse("", example(t, "    ", keyNeeds)); a.Needs == nil || len(a.Needs.TCP) != 1 || a.Needs.TCP[0] != "relay.example:443" {
		t.Errorf("the needs example: %+v", a.Needs)
	}
	if a := parse("", example(t, "    ", keyLogs)); a.Logs == nil || a.Logs.MaxSize != 1<<20 || a.Logs.Keep != 2 || !a.Logs.Timestamps {
		t.Errorf("an agent's logs example: %+v", a.Logs)
	}
	if a := parse(example(t, "", keyLogs), ""); a.Logs == nil || a.Logs.MaxSize != 10<<20 || a.Logs.Keep != 5 || !a.Logs.Timestamps {
		t.Errorf("the top logs example: %+v", a.Logs)
	}
	a := parse("", example(t, "    ", keySecrets))
	if len(a.Secrets) != 2 || a.Secrets["TOKEN"].Keyring != "demo-token" || len(a.Secrets["API_KEY"].Exec) != 3 {
		t.Errorf("the secrets example: %+v", a.Secrets)
	}
	// What each form and number means is said, not only shown.
	for _, words := range []string{
		"#   " + keyMaxSize + " ", "#   " + keyKeep + " ", "#   " + keyTimestamps + " ",
		"[stderr]", crashLoopNever + " (the default)", keyFailures + ": 5, " + keyWithin + ": 10m",
		needsNetwork + " (an interface", "{" + needsTCP + ": ", "{" + keyKeyring + ": ", "{" + keyExec + ": [",
		"# " + keyRestart + " here", "# " + keyLogs + " is every agent's default",
	} {
		if !bytes.Contains(Default(), []byte(words)) {
			t.Errorf("the default config does not say %q", words)
		}
	}
}

func TestWriteDefault(t *testing.T) {
	dir := testdir.Temp(t)
	path := filepath.Join(dir, "a", "b", "tether", "agents.yaml")
	if err := WriteDefault(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, Default()) {
		t.Error("written file differs from Default()")
	}
	if _, err := Load(path); err != nil {
		t.Errorf("written default does not load: %v", err)
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(path)
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("file mode %#o, want 0600", m)
		}
		for _, d := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b", "tether")} {
			fi, _ := os.Stat(d)
			if m := fi.Mode().Perm(); m != 0o700 {
				t.Errorf("%s mode %#o, want 0700", d, m)
			}
		}
	}

	// A second init refuses and leaves the user's edits alone.
	edited := []byte("agents: []\n")
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	err = WriteDefault(path)
	if !errors.Is(err, ErrExists) || !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteDefault: %v, want ErrExists", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("error %v does not carry the path", err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, edited) {
		t.Error("WriteDefault changed an existing file")
	}

	// A dangling symlink is not followed to create its target.
	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "link.yaml")
		target := filepath.Join(dir, "target.yaml")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteDefault(link); !errors.Is(err, ErrExists) {
			t.Errorf("WriteDefault over a dangling symlink: %v", err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Error("WriteDefault created the symlink's target")
		}
	}
}

func TestDefaultPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("XDG applies on Linux")
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg/conf")
	if got, err := DefaultPath(); err != nil || got != "/xdg/conf/tether/agents.yaml" {
		t.Errorf("DefaultPath() = %q, %v", got, err)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, err := DefaultPath(); err != nil || got != "/home/u/.config/tether/agents.yaml" {
		t.Errorf("DefaultPath() = %q, %v", got, err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(testdir.Temp(t), "agents.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing file: %v, want fs.ErrNotExist", err)
	}
	if p := problems(t, err); len(p) != 1 || p[0].File != path || !strings.Contains(p[0].Msg, "config init") {
		t.Errorf("problem = %+v", p)
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := testdir.Temp(t)
	_, err := Load(dir)
	if p := problems(t, err); len(p) != 1 || p[0].File != dir {
		t.Errorf("Load of a directory: %v", err)
	}
}

func TestLoadSymlinkedConfig(t *testing.T) {
	real, linkDir := testdir.Temp(t), testdir.Temp(t)
	target := write(t, real, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: a.env\n", 0o600)
	// Relative paths follow the path the user named, not the link target.
	write(t, linkDir, "a.env", "A=1\n", 0o600)
	link := filepath.Join(linkDir, "agents.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot make a symlink: %v", err)
	}
	if _, err := os.Stat(link); err != nil {
		// Wine makes a link that Windows programs cannot follow.
		t.Skipf("a symlink made here cannot be followed: %v", err)
	}
	cfg, err := Load(link)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != link || cfg.Agents[0].EnvFile != filepath.Join(linkDir, "a.env") {
		t.Errorf("Path %q, EnvFile %q", cfg.Path, cfg.Agents[0].EnvFile)
	}
}

// TestFingerprint: the same entry anywhere in the file has one
// fingerprint; a change of any key gives another.
func TestFingerprint(t *testing.T) {
	parse := func(body string) Agent {
		t.Helper()
		cfg, err := Parse("agents.yaml", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Agents[len(cfg.Agents)-1]
	}
	const a = "  - id: a\n    command: [run, it]\n    env: {K: v, L: w}\n"
	base := parse("agents:\n" + a).Fingerprint()
	if moved := parse("agents:\n  - id: b\n    command: [x]\n" + a).Fingerprint(); moved != base {
		t.Errorf("moving the entry changed its fingerprint")
	}
	if again := parse("agents:\n  - id: a\n    env: {L: w, K: v}\n    command: [run, it]\n").Fingerprint(); again != base {
		t.Errorf("the same keys in another order changed the fingerprint")
	}
	for _, changed := range []string{
		"  - id: a\n    command: [run, it, again]\n    env: {K: v, L: w}\n",
		"  - id: a\n    command: [run, it]\n    env: {K: v, L: x}\n",
		"  - id: a\n    command: [run, it]\n    env: {K: v, L: w}\n    stop_timeout: 9s\n",
	} {
		if parse("agents:\n"+changed).Fingerprint() == base {
			t.Errorf("a changed entry has the same fingerprint:\n%s", changed)
		}
	}
}

// idSpec and nameSpec say what an id and a variable name are, as the
// errors and the docs say it; validID and validName must agree.
var (
	idSpec   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)
	nameSpec = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func TestValidIDAndNameMatchTheirSpec(t *testing.T) {
	// Every string of up to three bytes from an alphabet with each
	// class's edges and its neighbours, and lengths around the limit.
	alphabet := []byte("09azAZ._@-/:`{[ \x00\x7f\xc3\xa9+")
	cases := []string{strings.Repeat("a", MaxIDLen), strings.Repeat("a", MaxIDLen+1), "a" + strings.Repeat(".", MaxIDLen-1), "é"}
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		cases = append(cases, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+string(c), n-1)
		}
	}
	grow("", 3)
	for _, s := range cases {
		if got, want := validID(s), idSpec.MatchString(s); got != want {
			t.Errorf("validID(%q) = %v, want %v", s, got, want)
		}
		if got, want := validName(s), nameSpec.MatchString(s); got != want {
			t.Errorf("validName(%q) = %v, want %v", s, got, want)
		}
	}
}

// mergeBomb is a config whose agents' env each merges the one before it
// nine times, levels deep: 802 bytes at 8 levels, 9^8 mappings once
// expanded.
func mergeBomb(levels int) string {
	var b strings.Builder
	b.WriteString("agents:\n  - id: a0\n    command: [x]\n    env: &e0 {A: \"1\"}\n")
	for n := 1; n <= levels; n++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*e%d, ", n-1), 9), ", ")
		fmt.Fprintf(&b, "  - id: a%d\n    command: [x]\n    env: &e%d {<<: [%s]}\n", n, n, refs)
	}
	return b.String()
}

func TestParseRefusesAliasBombs(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		key        string
	}{
		// Refused at the first level whose expansion is too big.
		{"merges", mergeBomb(8), 19, "agents[5].env"},
		// An anchor merged into itself nine times at each of its
		// maxMergeDepth levels.
		{"self-merge", "agents:\n  - id: a\n    command: [x]\n    env: &e {A: \"1\", <<: [" +
			strings.TrimSuffix(strings.Repeat("*e, ", 9), ", ") + "]}\n", 4, "agents[0].env"},
		// Plain aliases: every agent is one big agent again.
		{"aliases", "agents:\n  - &a\n    id: a\n    command: [x]\n    env: {" + bigEnv(1000) + "}\n" +
			strings.Repeat("  - *a\n", 200), 71, "agents[66]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Parse("agents.yaml", []byte(tc.text))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				// Unbounded, the merge bomb takes over a minute; refused,
				// every case takes milliseconds on an idle machine.
				t.Fatalf("a %d-byte config still parsing after 30 s", len(tc.text))
			}
			p := problems(t, err)
			if len(p) != 1 || p[0].File != "agents.yaml" || p[0].Line != tc.line || p[0].Key != tc.key ||
				!errors.Is(err, ErrExpansion) {
				t.Fatalf("got %v, want one ErrExpansion at agents.yaml:%d %s", err, tc.line, tc.key)
			}
		})
	}
}

// bigEnv is the inside of an env mapping of n variables.
func bigEnv(n int) string {
	vars := make([]string, n)
	for i := range vars {
		vars[i] = fmt.Sprintf("V%d: x", i)
	}
	return strings.Join(vars, ", ")
}

// A large config that merges its defaults into every agent reads them
// again far more often than minExpansion, and is read.
func TestParseManyMerges(t *testing.T) {
	const agents = 10000
	var b strings.Builder
	fmt.Fprintf(&b, "agents:\n  - &d\n    id: a0\n    command: [x]\n    restart: always\n    env: &e {%s}\n", bigEnv(8))
	for i := 1; i < agents; i++ {
		fmt.Fprintf(&b, "  - {<<: *d, id: a%d, env: {<<: *e, B: \"%d\"}}\n", i, i)
	}
	cfg, err := Parse("agents.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != agents {
		t.Fatalf("got %d agents", len(cfg.Agents))
	}
	if a := cfg.Agents[agents-1]; a.Restart != api.RestartAlways || len(a.Env) != 9 || a.Env["V7"] != "x" {
		t.Errorf("last agent: %+v", a)
	}
}

// secrets parse into references, and the config holds no value.
func TestParseSecrets(t *testing.T) {
	cfg, err := Parse("agents.yaml", []byte(`agents:
  - id: a
    command: [x]
    env: {PLAIN: p}
    secrets:
      TOKEN: {keyring: alice-token}
      API_KEY: {exec: [op, read, "op://vault/item/field"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Agents[0]
	want := map[string]SecretRef{
		"TOKEN":   {Keyring: "alice-token"},
		"API_KEY": {Exec: []string{"op", "read", "op://vault/item/field"}},
	}
	if !reflect.DeepEqual(a.Secrets, want) {
		t.Errorf("secrets %#v, want %#v", a.Secrets, want)
	}
	if got := a.SecretNames(); !reflect.DeepEqual(got, []string{"API_KEY", "TOKEN"}) {
		t.Errorf("SecretNames %v", got)
	}
	for ref, want := range map[string]SecretRef{
		`keyring "alice-token"`:                  want["TOKEN"],
		`exec [op read "op://vault/item/field"]`: want["API_KEY"],
		`exec [pass show "a b"]`:                 {Exec: []string{"pass", "show", "a b"}},
	} {
		if got := want.String(); got != ref {
			t.Errorf("String() = %s, want %s", got, ref)
		}
	}
	// Without secrets, the field stays nil: the fingerprint of an entry
	// that does not use them does not change.
	cfg, err = Parse("agents.yaml", []byte("agents:\n  - id: a\n    command: [x]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].Secrets != nil {
		t.Errorf("secrets %#v without the key", cfg.Agents[0].Secrets)
	}
	if b, _ := json.Marshal(cfg.Agents[0]); bytes.Contains(b, []byte("Secrets")) {
		t.Errorf("an entry without secrets is fingerprinted with them: %s", b)
	}
}

// Overlay sets variables over an environment, replacing those of the
// same name, in name order.
func TestOverlay(t *testing.T) {
	base := []string{"A=1", "TOKEN=old", "B=2"}
	got := Overlay(base, map[string]string{"TOKEN": "new", "C": "3"})
	want := []string{"A=1", "B=2", "C=3", "TOKEN=new"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Overlay = %v, want %v", got, want)
	}
	if base[1] != "TOKEN=old" {
		t.Errorf("Overlay changed its argument: %v", base)
	}
}
