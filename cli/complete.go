package cli

import (
	"context"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/suggest"
	"github.com/tether-dev/tether/service"
)

// The completion scripts are thin: each hands the words of the command
// line to a hidden command of the binary, `tether __complete WORD...`,
// and offers what it prints. So the three shells complete the same
// things, and what they complete follows the binary (its commands and
// flags) and the running service (its agents).

//go:embed completions
var completions embed.FS

// completeCmd is the hidden command the scripts call.
const completeCmd = "__complete"

// completionShells are the shells `tether completion` has a script for;
// each script is completions/tether.<shell>, but PowerShell's, which is
// completions/tether.ps1 (completionFile).
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// completionFile returns the name of shell's script among the
// completions (tether.bash, tether.zsh, tether.fish, tether.ps1).
func completionFile(shell string) string {
	if shell == "powershell" {
		return "tether.ps1"
	}
	return "tether." + shell
}

// CompletionScripts returns every completion script, by the name of its
// file, for the packages and archives.
func CompletionScripts() map[string][]byte {
	m := map[string][]byte{}
	for _, sh := range completionShells {
		b, err := completions.ReadFile("completions/" + completionFile(sh))
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		m[completionFile(sh)] = b
	}
	return m
}

// completion prints the script of a shell.
func (inv *invocation) completion(args []string) int {
	if len(args) != 1 {
		return inv.commandUsage(nil, "usage: tether completion bash|zsh|fish|powershell")
	}
	if !slices.Contains(completionShells, args[0]) {
		err := fmt.Errorf("completion: no script for %q (bash, zsh, fish or powershell)", args[0])
		if s := suggest.Best(args[0], completionShells); s != "" {
			err = fmt.Errorf("%w; did you mean %q?", err, s)
		}
		return inv.usage(err)
	}
	b, err := completions.ReadFile("completions/" + completionFile(args[0]))
	if err != nil {
		return inv.fail("%v", err)
	}
	_, _ = inv.stdout.Write(b)
	return ExitOK
}

// Flags offered for completion, by command. Global ones come first.
var (
	globalFlags  = []string{"--config", "--profile"}
	commandFlags = map[string][]string{
		"status":  {"--json", "--wide"},
		"start":   {"--no-wait"},
		"restart": {"--no-wait"},
		"logs":    {"-f", "-n", "--since", "--all", "--json"},
		"top":     {"--interval"},
	}
	serviceVerbs = []string{"run", "install", "uninstall", "start", "stop", "status", "upgrade"}
)

// complete runs `tether __complete WORD...`. WORD... are the words of a
// command line after "tether", the last the one being completed (empty
// for a new word). It prints the candidates that begin with it, one a
// line, and nothing where the shell should offer file names (the value
// of --config). It always exits 0: a completion never shows an error.
func (inv *invocation) complete(words []string) int {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, done := words[len(words)-1], words[:len(words)-1]
	for _, c := range inv.candidates(done, cur) {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(inv.stdout, c)
		}
	}
	return ExitOK
}

// candidates lists what may follow the words done, given that the word
// being typed is cur.
func (inv *invocation) candidates(done []string, cur string) []string {
	var pos []string // the words that are not global flags or their values
	for i := 0; i < len(done); i++ {
		a := done[i]
		switch {
		case a == "--config" || a == "--profile":
			if i+1 == len(done) {
				if a == "--profile" {
					return profiles()
				}
				return nil // a file name: the shell's own completion
			}
			i++
			if a == "--config" {
				inv.g.config = done[i]
			} else {
				inv.g.profile = done[i]
			}
		case strings.HasPrefix(a, "--config="):
			inv.g.config = strings.TrimPrefix(a, "--config=")
		case strings.HasPrefix(a, "--profile="):
			inv.g.profile = strings.TrimPrefix(a, "--profile=")
		default:
			pos = append(pos, a)
		}
	}
	flagsToo := strings.HasPrefix(cur, "-")
	if len(pos) == 0 {
		if flagsToo {
			return append(slices.Clone(globalFlags), "--help")
		}
		return commandNames()
	}
	cmd, args := pos[0], pos[1:]
	var out []string
	if flagsToo {
		out = append(out, commandFlags[cmd]...)
		out = append(out, "--help")
	}
	switch cmd {
	case "service":
		if len(args) == 0 {
			return append(out, serviceVerbs...)
		}
		if args[0] == "install" && flagsToo {
			out = append(out, "--print", "--no-start")
		}
	case "config":
		if len(args) == 0 {
			out = append(out, "init")
		} else if args[0] == "init" && flagsToo {
			out = append(out, "--print")
		}
	case "completion":
		if len(args) == 0 {
			out = append(out, completionShells...)
		}
	case "help":
		if len(args) == 0 {
			out = append(out, commandNames()...)
		}
	case "secret":
		switch {
		case len(args) == 0:
			out = append(out, "set", "ls")
		case len(args) == 1 && !flagsToo:
			out = append(out, inv.agentIDs()...)
		}
	case "start", "stop", "restart":
		if !flagsToo {
			// Each id once.
			for _, id := range inv.agentIDs() {
				if !slices.Contains(args, id) {
					out = append(out, id)
				}
			}
		}
	case "logs":
		if n := len(args); n > 0 && (args[n-1] == "-n" || args[n-1] == "--since") {
			return nil // a number, a duration
		}
		if !flagsToo && !slices.Contains(args, "--all") {
			for _, id := range inv.agentIDs() {
				if !slices.Contains(args, id) {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// completeTimeout bounds the question to the service: a completion must
// not hang on a service that does not answer.
const completeTimeout = time.Second

// agentIDs are the ids of the profile's agents: the running service's,
// else those of the config it would load.
func (inv *invocation) agentIDs() []string {
	p, err := inv.paths()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	var ids []string
	if st, err := client.New(p.Socket).Status(ctx); err == nil {
		for _, a := range st.Agents {
			ids = append(ids, a.ID)
		}
		return ids
	}
	cfg, err := service.LoadConfig(p)
	if err != nil {
		return nil
	}
	for _, a := range cfg.Agents {
		ids = append(ids, a.ID)
	}
	return ids
}

// profiles are the profiles that have a state directory.
func profiles() []string {
	p, err := service.ResolvePaths("", "")
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(filepath.Dir(p.StateDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != filepath.Base(p.LockDir) && api.ValidateProfile(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out
}
