package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completeWorld gives the command line a throwaway user: no service
// runs, and the config has agents alice, alina and bob; profiles work
// and home have state directories.
func completeWorld(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"config/tether", "state/tether/work", "state/tether/home", "state/tether/locks", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	cfg := "agents:\n  - id: alice\n    command: [x]\n  - id: alina\n    command: [x]\n  - id: bob\n    command: [x]\n"
	if err := os.WriteFile(filepath.Join(dir, "config", "tether", "agents.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("agents:\n  - id: zed\n    command: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TETHER_TEST_OTHER_CONFIG", other)
}

func TestComplete(t *testing.T) {
	completeWorld(t)
	other := os.Getenv("TETHER_TEST_OTHER_CONFIG")
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, commandNames()},
		{[]string{"st"}, []string{"status", "start", "stop"}},
		{[]string{"-"}, []string{"--config", "--profile", "--help"}},
		{[]string{"start", ""}, []string{"alice", "alina", "bob"}},
		{[]string{"start", "al"}, []string{"alice", "alina"}},
		{[]string{"stop", "alice", ""}, []string{"alina", "bob"}}, // each id once
		{[]string{"start", "--"}, []string{"--no-wait", "--help"}},
		{[]string{"--config", other, "restart", ""}, []string{"zed"}},
		{[]string{"--config=" + other, "restart", ""}, []string{"zed"}},
		{[]string{"logs", ""}, []string{"alice", "alina", "bob"}},
		{[]string{"logs", "bob", ""}, []string{"alice", "alina"}},
		{[]string{"logs", "--all", ""}, nil},
		{[]string{"logs", "bob", "-n", ""}, nil},
		{[]string{"logs", "bob", "--since", ""}, nil},
		{[]string{"logs", "bob", "-"}, []string{"-f", "-n", "--since", "--all", "--json", "--help"}},
		{[]string{"status", "--"}, []string{"--json", "--wide", "--help"}},
		{[]string{"service", ""}, serviceVerbs},
		{[]string{"service", "install", "--p"}, []string{"--print"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish", "powershell"}},
		{[]string{"help", "re"}, []string{"restart", "reload"}},
		{[]string{"config", ""}, []string{"init"}},
		{[]string{"--config", ""}, nil}, // a file: the shell's own
		{[]string{"--profile", ""}, []string{"home", "work"}},
		{[]string{"--profile", "work", "st"}, []string{"status", "start", "stop"}},
		{nil, commandNames()},
	} {
		var out strings.Builder
		inv := &invocation{stdout: &out, stderr: &out}
		if code := inv.complete(c.words); code != ExitOK {
			t.Errorf("%q: exit %d", c.words, code)
		}
		got := strings.Fields(out.String())
		if !slices.Equal(got, c.want) {
			t.Errorf("complete %q = %q, want %q", c.words, got, c.want)
		}
	}
}

// TestCompletionScripts: each shell has a script that hands the words to
// __complete; an unknown shell is a usage error.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range completionShells {
		code, script, _ := runCLI(t, "completion", sh)
		if code != ExitOK || !strings.Contains(script, completeCmd) {
			t.Errorf("completion %s: exit %d\n%s", sh, code, script)
		}
	}
	scripts := CompletionScripts()
	for _, name := range []string{"tether.bash", "tether.zsh", "tether.fish", "tether.ps1"} {
		if !strings.Contains(string(scripts[name]), completeCmd) {
			t.Errorf("CompletionScripts has no %s calling %s", name, completeCmd)
		}
	}
	if code, _, _ := runCLI(t, "completion"); code != ExitUsage {
		t.Errorf("completion without a shell: exit %d", code)
	}
}
