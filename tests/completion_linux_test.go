package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// shellCompletion runs a completion in a real shell, with the world's
// tether first on PATH, and returns the candidates, one a line.
func (w *world) shellCompletion(shell, script string) []string {
	w.t.Helper()
	needTools(w.t, shell)
	cmd := exec.Command(shell, "-c", script)
	if shell == "zsh" {
		cmd = exec.Command(shell, "-f", "-c", script) // no user startup files
	}
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+filepath.Dir(tether)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+w.dir)
	out, errs, err := runBounded(w.t, cmd, 20*time.Second)
	if err != nil {
		w.t.Fatalf("%s: %v\n%s%s", shell, err, out, errs)
	}
	return strings.Fields(out)
}

// TestCompletionInRealShells: the scripts of `tether completion` complete
// commands, flags and the running service's agent ids in bash, zsh and
// fish themselves.
func TestCompletionInRealShells(t *testing.T) {
	w := newWorld(t)
	w.writeConfig("agents:\n  - id: alice\n    command: [/bin/sleep, \"1000\"]\n  - id: alina\n    command: [/bin/sleep, \"1000\"]\n  - id: bob\n    command: [/bin/sleep, \"1000\"]\n")
	w.startService("default")

	// bash: the function the script registers, called as readline would.
	bash := func(words ...string) []string {
		quoted := make([]string, len(words))
		for i, wd := range words {
			quoted[i] = "'" + wd + "'"
		}
		return w.shellCompletion("bash", `source <(tether completion bash) || exit 1
complete -p tether >/dev/null || exit 1
COMP_WORDS=(tether `+strings.Join(quoted, " ")+`); COMP_CWORD=`+strconv.Itoa(len(words))+`
_tether; printf '%s\n' "${COMPREPLY[@]}"`)
	}
	// zsh: the function, with compadd (a builtin of the completion
	// system, which runs only in an interactive line editor) printing
	// what it is given.
	zsh := func(words ...string) []string {
		quoted := make([]string, len(words))
		for i, wd := range words {
			quoted[i] = "'" + wd + "'"
		}
		return w.shellCompletion("zsh", `compdef() { }; compadd() { [[ $1 == -- ]] && shift; print -l -- "$@" }; _files() { print FILES }
source <(tether completion zsh) || exit 1
words=(tether `+strings.Join(quoted, " ")+`); CURRENT=`+strconv.Itoa(len(words)+1)+`
_tether`)
	}
	// fish: complete -C asks fish for the completions of a command line.
	fish := func(line string) []string {
		return w.shellCompletion("fish", `tether completion fish | source; or exit 1
complete -C'`+line+`'`)
	}

	for _, c := range []struct {
		name string
		got  func() []string
		want []string
	}{
		{"bash commands", func() []string { return bash("st") }, []string{"status", "start", "stop"}},
		{"bash ids", func() []string { return bash("start", "al") }, []string{"alice", "alina"}},
		{"bash each id once", func() []string { return bash("stop", "alice", "") }, []string{"alina", "bob"}},
		{"bash flags", func() []string { return bash("status", "--") }, []string{"--json", "--wide", "--help"}},
		{"zsh commands", func() []string { return zsh("st") }, []string{"status", "start", "stop"}},
		{"zsh ids", func() []string { return zsh("restart", "") }, []string{"alice", "alina", "bob"}},
		{"zsh files for --config", func() []string { return zsh("--config", "") }, []string{"FILES"}},
		{"fish commands", func() []string { return fish("tether st") }, []string{"start", "status", "stop"}},
		{"fish ids", func() []string { return fish("tether logs a") }, []string{"alice", "alina"}},
		{"fish service", func() []string { return fish("tether service ") }, []string{"install", "run", "start", "status", "stop", "uninstall", "upgrade"}},
	} {
		if got := c.got(); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
