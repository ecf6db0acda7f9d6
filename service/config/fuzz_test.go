package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tether-dev/tether/identity"
	"github.com/tether-dev/tether/internal/testdir"
	"gopkg.in/yaml.v3"
)

// fuzzEnvFiles are the env files beside the fuzzed config, for its
// env_file entries to name: one good, one with a bad line, one that every
// user may read (refused on Unix).
var fuzzEnvFiles = map[string]struct {
	text string
	mode os.FileMode
}{
	"good.env": {"# settings\nexport A=1\nB='two words'\n\nC=\"x=y\"\n", 0o600},
	"bad.env":  {"A=1\n\nthis is not a pair\n", 0o600},
	"open.env": {"A=1\n", 0o644},
}

// configSeeds are configs as users write them, right and wrong.
var configSeeds = []string{
	`# every key
agents:
  - id: relay-1
    command: [goose, acp, --port, 8080, true, "", '#']
    identity: "relay@example.org"
    stop_timeout: 250ms
    restart: on-failure
    autostart: yes
    env_file: ./good.env
    env:
      LOG_LEVEL: debug
      COUNT: 3
      UNSET:
    dir: ~/work
  - id: demo
    command:
      - tether
      - demo-agent
    dir: sub/dir
    restart: never
`,
	`agents:
  - &x {id: a, command: [x], env: &e {A: "1", B: "2"}, restart: always}
  - {<<: *x, id: b, identity: b, env: {<<: *e, B: "3"}}
  - {id: c, command: [y], env: *e}
  - {<<: [*x, {dir: /srv}], id: d, identity: d}
`,
	"agents:\n  - &a\n    <<: *a\n    id: x\n    command: [x]\n",
	"agents:\n  - id: a\n    command: [x]\n    env_file: bad.env\n  - id: b\n    command: [x]\n    env_file: open.env\n",
	"agents:\n  - id: a\n    command: [x]\n    env_file: missing.env\n    dir: ~alice/x\n",
	"agents:\n  - id: a\n    command: [x, y]\n  - id: b\n    command: x: y\n",
	"agents:\n  - id: a\n    command: [x, y\n  - id: b\n",
	"agents:\n  - id: a\n\tcommand: [x]\n",
	"agents:\n  - id: a\n   command: [x]\n",
	"\tagents: []\n",
	"agents: []\n---\nagents: []\n",
	"- id: a\n",
	"agents:\n  id: a\n",
	"agents:\n  - a\n",
	"agents:\n  - id: a\n    command: [x]\n    id: b\n",
	"agents:\n  - id: a\n    command: [x]\n    restrat: never\n    autostart: maybe\n    stop_timeout: 0s\n",
	"agents:\n  - id: a\n    command: [x]\n  - id: a\n    identity: a\n    command: [y]\n",
	"agents:\n  - id: \"-bad\"\n    command: \"sh -c x\"\n    restart: sometimes\n    stop_timeout: 2h\n",
	"agents:\n  - id: a\n    command: [\"\", \"a\\0b\"]\n    env: {1A: x, B: \"\\0\"}\n    dir: \"a\\0b\"\n",
	"agents:\n  - id: a\n    command: [!!binary aGVsbG8=]\n    identity: !!binary /w==\n",
	"agents:\r\n  - id: a\r\n    command: [x]\r\n",
	"",
	"~\n",
	"{}\n",
}

func FuzzParse(f *testing.F) {
	f.Add(Default())
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	dir := testdir.Temp(f)
	for name, ef := range fuzzEnvFiles {
		p := filepath.Join(dir, name)
		// Chmod after: WriteFile's mode is filtered by the umask.
		if err := os.WriteFile(p, []byte(ef.text), ef.mode); err != nil {
			f.Fatal(err)
		}
		if err := os.Chmod(p, ef.mode); err != nil {
			f.Fatal(err)
		}
	}
	path := filepath.Join(dir, "agents.yaml")

	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		cfg, err := Parse(path, data)
		if !bytes.Equal(data, in) {
			t.Fatal("Parse modified its input")
		}
		again, err2 := Parse(path, data)
		if !reflect.DeepEqual(cfg, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("a second Parse differs:\n%v, %v\n%v, %v", cfg, err, again, err2)
		}
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a config along with %v", err)
			}
			checkProblems(t, dir, path, data, problems(t, err))
			return
		}
		if cfg == nil {
			t.Fatal("Parse returned neither a config nor an error")
		}
		checkConfig(t, cfg, len(lineEnds(data)))
		// The config written out again reads back the same.
		text := renderConfig(t, cfg)
		back, err := Parse(path, text)
		if err != nil {
			t.Fatalf("the config written out again does not parse: %v\n%s", err, text)
		}
		if got, want := withoutLines(back), withoutLines(cfg); !reflect.DeepEqual(got, want) {
			t.Fatalf("the config written out again reads back different:\n got %+v\nwant %+v\n%s", got, want, text)
		}
	})
}

// checkProblems checks what every problem of a config must say: the file,
// a line within it, a message, and a key unless the problem is the file's
// as a whole.
func checkProblems(t *testing.T, dir, path string, data []byte, probs []*Error) {
	t.Helper()
	if len(probs) == 0 {
		t.Fatal("an error without a problem")
	}
	lines := len(lineEnds(data))
	last := 0
	for _, e := range probs {
		if e.Msg == "" {
			t.Errorf("%v: no message", e)
		}
		if e.Line < 1 {
			t.Errorf("%v: no line", e)
		}
		if e.File != path {
			// A bad line of an env_file, named with the file's own line.
			ef, ok := fuzzEnvFiles[filepath.Base(e.File)]
			if !ok || filepath.Dir(e.File) != dir {
				t.Errorf("%v: names file %q, neither the config nor an env_file", e, e.File)
			} else if n := strings.Count(ef.text, "\n") + 1; e.Line > n {
				t.Errorf("%v: line %d of an env_file of %d lines", e, e.Line, n)
			}
			if !strings.HasSuffix(e.Key, "."+keyEnvFile) {
				t.Errorf("%v: a problem of an env_file under key %q", e, e.Key)
			}
			continue
		}
		if e.Line > lines {
			t.Errorf("%v: line %d of a config of %d lines", e, e.Line, lines)
		}
		if e.Line < last {
			t.Errorf("%v: reported after a problem at line %d", e, last)
		}
		last = e.Line
		switch {
		case e.Key == "" && !wholeFile(e.Msg):
			t.Errorf("%v: no key", e)
		case e.Key != "" && strings.HasPrefix(e.Key, "agents[") && !agentKey.MatchString(e.Key):
			t.Errorf("%v: key %q is not the path of an agent's key", e, e.Key)
		}
		if problem, ok := strings.CutPrefix(e.Msg, "invalid YAML: "); ok {
			if len(probs) != 1 {
				t.Errorf("%v: a syntax error among %d problems", e, len(probs))
			}
			checkSyntaxLine(t, data, e, problem)
		}
	}
}

// agentKey is the shape of the key of a problem inside the agents list.
var agentKey = regexp.MustCompile(`^agents\[[0-9]+\](\..*)?$`)

// wholeFile says whether a problem without a key is one of the file as a
// whole: its YAML, its documents, its root, a key of the root that has no
// name to report.
func wholeFile(msg string) bool {
	return strings.HasPrefix(msg, "invalid YAML: ") ||
		strings.HasPrefix(msg, "a second YAML document") ||
		strings.HasPrefix(msg, "the config must be a mapping") ||
		strings.HasPrefix(msg, "keys must be plain names")
}

// checkSyntaxLine checks that a syntax error names the line of its fault:
// the lines up to it fail with the same problem, and, unless it is the
// first, the lines before it do not.
func checkSyntaxLine(t *testing.T, data []byte, e *Error, problem string) {
	t.Helper()
	if len(data) > maxSearch || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return // the line yaml.v3 named stands
	}
	ends := lineEnds(data)
	if e.Line < 1 || e.Line > len(ends) {
		return // reported above
	}
	failsWith := func(n int) string {
		if n == 0 {
			return ""
		}
		if _, _, err := decodeYAML(data[:ends[n-1]]); err != nil {
			_, p := yamlProblem(err)
			return p
		}
		return ""
	}
	if got := failsWith(e.Line); got != problem {
		t.Errorf("%v: the first %d lines fail with %q, not with the problem reported", e, e.Line, got)
	}
	if got := failsWith(e.Line - 1); got == problem {
		t.Errorf("%v: the first %d lines fail with the same problem already", e, e.Line-1)
	}
}

// checkConfig checks what a valid config promises.
func checkConfig(t *testing.T, cfg *Config, lines int) {
	t.Helper()
	ids, identities := map[string]bool{}, map[string]bool{}
	for _, a := range cfg.Agents {
		if ids[a.ID] || identities[a.Identity] {
			t.Errorf("%+v: id or identity given twice", a)
		}
		ids[a.ID], identities[a.Identity] = true, true
		if !idSpec.MatchString(a.ID) {
			t.Errorf("%+v: invalid id", a)
		}
		if err := identity.Validate(a.Identity); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
		if len(a.Command) == 0 || a.Command[0] == "" || slices.ContainsFunc(a.Command, hasNUL) {
			t.Errorf("%+v: invalid command", a)
		}
		for _, p := range []string{a.Dir, a.EnvFile} {
			if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p) {
				t.Errorf("%+v: path %q is not absolute and clean", a, p)
			}
		}
		for k, v := range a.Env {
			if !nameSpec.MatchString(k) || hasNUL(v) {
				t.Errorf("%+v: invalid env %q=%q", a, k, v)
			}
		}
		if !a.Restart.Valid() || a.StopTimeout <= 0 || a.StopTimeout > MaxStopTimeout {
			t.Errorf("%+v: invalid restart or stop_timeout", a)
		}
		if a.Line < 1 || a.Line > lines {
			t.Errorf("%+v: line %d of a config of %d lines", a, a.Line, lines)
		}
		// An env_file checked at load time can be read at start.
		if _, err := a.Environ(nil); err != nil {
			t.Errorf("%+v: Environ: %v", a, err)
		}
	}
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// renderConfig writes cfg as a config file, every key explicit.
func renderConfig(t *testing.T, cfg *Config) []byte {
	t.Helper()
	type agentYAML struct {
		ID          string            `yaml:"id"`
		Identity    string            `yaml:"identity"`
		Command     []string          `yaml:"command"`
		Dir         string            `yaml:"dir,omitempty"`
		Env         map[string]string `yaml:"env,omitempty"`
		EnvFile     string            `yaml:"env_file,omitempty"`
		Autostart   bool              `yaml:"autostart"`
		Restart     string            `yaml:"restart"`
		StopTimeout string            `yaml:"stop_timeout"`
	}
	var doc struct {
		Agents []agentYAML `yaml:"agents"`
	}
	for _, a := range cfg.Agents {
		doc.Agents = append(doc.Agents, agentYAML{a.ID, a.Identity, a.Command, a.Dir, a.Env, a.EnvFile, a.Autostart, string(a.Restart), a.StopTimeout.String()})
	}
	text, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatalf("writing the config out again: %v", err)
	}
	return text
}

// withoutLines returns cfg's agents without their lines, and with an empty
// env the same as none.
func withoutLines(cfg *Config) []Agent {
	out := slices.Clone(cfg.Agents)
	for i := range out {
		out[i].Line = 0
		if len(out[i].Env) == 0 {
			out[i].Env = nil
		}
	}
	return out
}

func FuzzEnvFile(f *testing.F) {
	for _, ef := range fuzzEnvFiles {
		f.Add(ef.text)
	}
	for _, s := range []string{
		"# secrets\nA=1\n\nthis is not a pair\n",
		"A=1\n2B=2\n",
		"A=\"1\n",
		"\n\nA='1\"\n",
		"A=x\x00y\n",
		"export  A = ' spaced '\r\nexport=1\nexportB=2\n  # indented comment\nA=last\n",
		"A=#not a comment\nB=\"\"\nC=''\nD='\"'\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		vars, line, msg := parseEnv(text)
		lines := strings.Split(text, "\n")
		if msg != "" {
			if vars != nil {
				t.Errorf("variables along with %q", msg)
			}
			if line < 1 || line > len(lines) {
				t.Fatalf("line %d of a file of %d lines: %s", line, len(lines), msg)
			}
			if !envMessage.MatchString(msg) {
				t.Errorf("message %q quotes more of the file than a valid name", msg)
			}
			// The fault is on that line: the lines before it are good,
			// and the line alone fails the same way.
			if _, _, m := parseEnv(strings.Join(lines[:line-1], "\n")); m != "" {
				t.Errorf("line %d reported, but the lines before it fail: %s", line, m)
			}
			if _, l, m := parseEnv(lines[line-1]); l != 1 || m != msg {
				t.Errorf("line %d reported (%s), but alone it gives line %d: %q", line, msg, l, m)
			}
			return
		}
		if line != 0 {
			t.Errorf("line %d without a message", line)
		}
		// The variables, written one NAME="value" a line, read back
		// the same.
		var b strings.Builder
		for _, v := range vars {
			if !nameSpec.MatchString(v.name) || hasNUL(v.value) || strings.Contains(v.value, "\n") {
				t.Errorf("invalid variable %q=%q", v.name, v.value)
			}
			fmt.Fprintf(&b, "%s=\"%s\"\n", v.name, v.value)
		}
		back, l, m := parseEnv(b.String())
		if m != "" || !slices.Equal(back, vars) {
			t.Errorf("written out again, the variables read back as %q (line %d: %s), not %q", back, l, m, vars)
		}
	})
}

// envMessage matches every message about a line of an env file: none
// quotes the file but for a valid variable name.
var envMessage = regexp.MustCompile(`^(not a KEY=VALUE line \(and not a # comment\)` +
	`|the name before '=' is not a valid variable name: use letters, digits and '_', not starting with a digit` +
	`|the value of [A-Za-z_][A-Za-z0-9_]* (opens a ['"] quote that does not close at the end of the line|contains a NUL byte))$`)
