package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
)

func TestParseEnv(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []envVar
	}{
		{"empty", "", nil},
		{"comments and blanks", "# c\n\n   \n  # indented\nA=1\n", []envVar{{"A", "1"}}},
		{"export", "export A=1\nexport\tB=2\nexportC=3\n", []envVar{{"A", "1"}, {"B", "2"}, {"exportC", "3"}}},
		{"export as a name", "export=1\n", []envVar{{"export", "1"}}},
		{"double quotes keep spaces", `A=" x # y "` + "\n", []envVar{{"A", " x # y "}}},
		{"single quotes", "A='$HOME \\n'\n", []envVar{{"A", "$HOME \\n"}}},
		{"no expansion", "A=$HOME\nB=${A}x\nC=`id`\n", []envVar{{"A", "$HOME"}, {"B", "${A}x"}, {"C", "`id`"}}},
		{"hash in value", "A=p#ss # not a comment\n", []envVar{{"A", "p#ss # not a comment"}}},
		{"equals in value", "A=b=c\n", []envVar{{"A", "b=c"}}},
		{"empty values", "A=\nB=\"\"\nC=''\n", []envVar{{"A", ""}, {"B", ""}, {"C", ""}}},
		{"spaces around", "  A = 1  \n", []envVar{{"A", "1"}}},
		{"CRLF", "A=1\r\nB=\"2\"\r\n", []envVar{{"A", "1"}, {"B", "2"}}},
		{"inner quotes stay", `A=a"b'c` + "\n", []envVar{{"A", `a"b'c`}}},
		{"no trailing newline", "A=1", []envVar{{"A", "1"}}},
		{"repeated name", "A=1\nA=2\n", []envVar{{"A", "1"}, {"A", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, line, msg := parseEnv(tt.text)
			if msg != "" {
				t.Fatalf("line %d: %s", line, msg)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	bad := []struct {
		name string
		text string
		line int
	}{
		{"no equals", "A=1\nJUSTANAME\n", 2},
		{"export without value", "export A\n", 1},
		{"empty name", "=1\n", 1},
		{"digit first", "\n1A=1\n", 2},
		{"dash", "A-B=1\n", 1},
		{"space in name", "A B=1\n", 1},
		{"unclosed double", "A=\"abc\n", 1},
		{"unclosed single", "A='abc\n", 1},
		{"lone quote", "A=\"\n", 1},
		{"mismatched", "A=\"abc'\n", 1},
		{"text after quote", "A=\"abc\" # comment\n", 1},
		{"NUL", "A=a\x00b\n", 1},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, line, msg := parseEnv(tt.text)
			if msg == "" || line != tt.line {
				t.Errorf("line %d, message %q; want an error on line %d", line, msg, tt.line)
			}
		})
	}
}

// loadOne loads a config with one agent whose env_file is envText.
func loadOne(t *testing.T, envText string, envMode os.FileMode, extra string) (*Config, string) {
	t.Helper()
	dir := testdir.Temp(t)
	envPath := write(t, dir, "agent.env", envText, envMode)
	cfgPath := write(t, dir, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: agent.env\n"+extra, 0o600)
	cfg, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, envPath
}

func TestEnvironMerges(t *testing.T) {
	cfg, _ := loadOne(t, "B=file\nexport C=file\nE=first\nE=second\n", 0o600,
		"    env: {C: map, D: map, A: map2}\n")
	base := []string{"A=base", "B=base", "PATH=/bin", "=C:=C:\\x"}
	baseCopy := append([]string(nil), base...)
	got, err := cfg.Agents[0].Environ(base)
	if err != nil {
		t.Fatal(err)
	}
	// base minus what is overridden, then the file in order (env wins for
	// C), then env sorted by name.
	want := []string{"PATH=/bin", "=C:=C:\\x", "B=file", "C=map", "E=second", "A=map2", "D=map"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ =\n %q\nwant\n %q", got, want)
	}
	if !reflect.DeepEqual(base, baseCopy) {
		t.Error("Environ modified base")
	}
}

func TestEnvironWithoutEnvFile(t *testing.T) {
	a := Agent{ID: "a", Env: map[string]string{"X": "1"}}
	got, err := a.Environ([]string{"X=0", "Y=2"})
	if err != nil || !reflect.DeepEqual(got, []string{"Y=2", "X=1"}) {
		t.Errorf("Environ = %q, %v", got, err)
	}
	got, err = Agent{}.Environ(nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Environ of nothing = %q, %v", got, err)
	}
}

func TestEnvironReadsAtStart(t *testing.T) {
	cfg, envPath := loadOne(t, "TOKEN=old\n", 0o600, "")
	if err := os.WriteFile(envPath, []byte("TOKEN=new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Agents[0].Environ(nil)
	if err != nil || !reflect.DeepEqual(got, []string{"TOKEN=new"}) {
		t.Errorf("Environ = %q, %v; want the file as it is now", got, err)
	}
}

func TestEnvironErrors(t *testing.T) {
	t.Run("removed", func(t *testing.T) {
		cfg, envPath := loadOne(t, "A=1\n", 0o600, "")
		os.Remove(envPath)
		_, err := cfg.Agents[0].Environ(nil)
		var e *Error
		if !errors.As(err, &e) || e.File != envPath || e.Key != "env_file" || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Environ after removal: %#v", err)
		}
	})
	t.Run("bad line", func(t *testing.T) {
		cfg, envPath := loadOne(t, "A=1\n", 0o600, "")
		write(t, filepath.Dir(envPath), "agent.env", "A=1\nB=2\nsecret-without-name\n", 0o600)
		_, err := cfg.Agents[0].Environ(nil)
		var e *Error
		if !errors.As(err, &e) || e.File != envPath || e.Line != 3 || e.Key != "env_file" {
			t.Errorf("Environ with a bad line: %#v", err)
		}
		if strings.Contains(err.Error(), "secret-without-name") {
			t.Errorf("the error quotes the env file: %v", err)
		}
	})
	t.Run("world-readable", func(t *testing.T) {
		unixOnly(t)
		cfg, envPath := loadOne(t, "A=1\n", 0o600, "")
		if err := os.Chmod(envPath, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := cfg.Agents[0].Environ(nil)
		var e *Error
		if !errors.As(err, &e) || e.File != envPath || !strings.Contains(e.Msg, "chmod 600") {
			t.Errorf("Environ of a world-readable file: %v", err)
		}
	})
}

func TestEnvFileWorldReadable(t *testing.T) {
	unixOnly(t)
	for _, mode := range []os.FileMode{0o604, 0o644, 0o666, 0o755} {
		t.Run(fmt.Sprintf("%#o", mode), func(t *testing.T) {
			dir := testdir.Temp(t)
			write(t, dir, "agent.env", "TOKEN=hunter2\n", mode)
			cfgPath := write(t, dir, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: agent.env\n", 0o600)
			_, err := Load(cfgPath)
			p := problems(t, err)
			if len(p) != 1 || p[0].File != cfgPath || p[0].Line != 4 || p[0].Key != "agents[0].env_file" {
				t.Fatalf("problems = %v", err)
			}
			if !strings.Contains(p[0].Msg, "readable by every user") || !strings.Contains(p[0].Msg, "chmod 600") {
				t.Errorf("message %q does not say what is wrong and how to fix it", p[0].Msg)
			}
		})
	}
	// Group-readable is the user's choice, and fine.
	for _, mode := range []os.FileMode{0o600, 0o640, 0o400} {
		dir := testdir.Temp(t)
		write(t, dir, "agent.env", "TOKEN=hunter2\n", mode)
		cfgPath := write(t, dir, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: agent.env\n", 0o600)
		if _, err := Load(cfgPath); err != nil {
			t.Errorf("mode %#o: %v", mode, err)
		}
	}
}

func TestEnvFileUnreadable(t *testing.T) {
	unixOnly(t)
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	dir := testdir.Temp(t)
	write(t, dir, "agent.env", "A=1\n", 0o000)
	cfgPath := write(t, dir, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: agent.env\n", 0o600)
	_, err := Load(cfgPath)
	p := problems(t, err)
	if len(p) != 1 || p[0].Line != 4 || p[0].Key != "agents[0].env_file" || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("problems = %v", err)
	}
}

func TestEnvFileFIFO(t *testing.T) {
	unixOnly(t)
	dir := testdir.Temp(t)
	fifo := filepath.Join(dir, "agent.env")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cfgPath := write(t, dir, "agents.yaml", "agents:\n  - id: a\n    command: [x]\n    env_file: agent.env\n", 0o600)
	// Must answer at once, not block opening the FIFO.
	_, err := Load(cfgPath)
	if p := problems(t, err); len(p) != 1 || !strings.Contains(p[0].Msg, "not a regular file") {
		t.Errorf("problems = %v", err)
	}
}

// TestSecretsStayInTheFile checks that env_file values appear nowhere but
// in the slice Environ returns: not in the Config, not in any error.
func TestSecretsStayInTheFile(t *testing.T) {
	const secret = "s3cr3t-value-7f1c"
	cfg, envPath := loadOne(t, "TOKEN="+secret+"\n", 0o600, "")
	dump := fmt.Sprintf("%v %+v %#v", cfg, *cfg, cfg.Agents)
	if strings.Contains(dump, secret) {
		t.Errorf("the loaded config holds the secret: %s", dump)
	}
	env, err := cfg.Agents[0].Environ(nil)
	if err != nil || !reflect.DeepEqual(env, []string{"TOKEN=" + secret}) {
		t.Errorf("Environ = %q, %v", env, err)
	}

	// Malformed lines around a secret: the errors quote none of it.
	dir := filepath.Dir(envPath)
	cfgPath := filepath.Join(dir, "agents.yaml")
	for _, text := range []string{
		secret + "\n",
		"TOKEN=\"" + secret + "\n",
		"TOKEN='" + secret + "\"\n",
		secret + "=x\n",
		"export " + secret + "\n",
		"TOKEN=" + secret + "\x00\n",
	} {
		write(t, dir, "agent.env", text, 0o600)
		_, loadErr := Load(cfgPath)
		_, envErr := cfg.Agents[0].Environ(nil)
		for _, err := range []error{loadErr, envErr} {
			if err == nil {
				t.Errorf("%q: no error", text)
			} else if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, problems(t, err)), secret) {
				t.Errorf("%q: the error shows the secret: %v", text, err)
			}
		}
	}

	// Nor does the world-readable complaint.
	if runtime.GOOS != "windows" {
		write(t, dir, "agent.env", "TOKEN="+secret+"\n", 0o644)
		if _, err := Load(cfgPath); err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}
