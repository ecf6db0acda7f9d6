package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tether-dev/tether/internal/suggest"
)

// doc is the help of one command: `tether help NAME` and `tether NAME
// --help` print it, and the summary of every command makes the usage.
type doc struct {
	name    string
	usage   string // after "tether "
	summary string // one line, in the list of commands
	text    string // what it does, in a few lines; "" for none
	example string // one command line or more, each with a comment
}

// docs lists the commands, in the order the usage shows them. Commands
// that are not meant to be typed (guardian, demo-agent, __complete) have
// none.
var docs = []doc{
	{name: "tray", usage: "tray", summary: `the system tray (also a bare "tether" on a desktop)`,
		text: `Shows the agents of the profile's service in the system tray, with their
state and their last error, and lets you start, stop and restart them,
open their logs and the config, start the service, and turn starting at
login on and off. It owns no agent: quitting it changes nothing.`,
		example: "tether tray                   # the tray of the default profile\ntether --profile work tray    # the tray of profile work"},
	{name: "demo", usage: "demo", summary: "self-contained crash-survival demo in a temp dir",
		text: `Runs a service with demo agents in a throwaway directory, kills it with
SIGKILL and shows that every agent tree is gone, then cleans up.`,
		example: "tether demo"},
	{name: "service", usage: "service run|install|uninstall|start|stop|status|upgrade", summary: "run the service, register it with the OS, or upgrade it",
		text: `run        run the service of the profile in the foreground
install    register it to start at login, and start it and wait until it
           answers (--no-start: register it only; --print: show the files
           it would write, and write nothing)
uninstall  stop the registered service and its agents, and remove the
           registration and the tray's autostart entry (a service run
           from a shell keeps running)
start      start the registered service
stop       stop the registered service, and its agents (where none is
           registered, the one a "service run" runs)
status     say whether it is registered, current and running
upgrade [BINARY]
           replace the running service by BINARY (default: this one),
           every agent left running, the same pids`,
		example: "tether service run                      # in the foreground, until Ctrl-C\ntether --config ~/bots.yaml service install\ntether service install --print          # what would be written\ntether service upgrade                  # after installing a new tether"},
	{name: "status", usage: "status [--json] [--wide]", summary: "one row per agent (status --help: its states and codes)",
		example: "tether status\ntether status --json | jq '.agents[] | select(.state == \"failed\")'"},
	{name: "top", usage: "top [--interval D]", summary: "a live full-screen view of the agents, with keys to act on them",
		text: `Shows one row per agent (failed ones first), kept current from the
service's events, and survives the service going away and coming back.
Keys: up and down select an agent; s starts it, x stops it (a running
one asks y/n first), r restarts it; l follows its log in a pane; u
measures CPU and memory once; + and - measure them while the view is
open, every 30s, 10s, 5s, 2s or 1s (+ faster, - slower, and off after
30s), which --interval sets from the start (off by default); R reloads
the config; / filters the rows by id; ? shows the keys; q quits.
NO_COLOR turns the colours off.`,
		example: "tether top\ntether --profile work top\ntether top --interval 5s"},
	{name: "start", usage: "start [--no-wait] ID...", summary: "start agents; answers once they are ready (--no-wait: once spawned)",
		text: `Enables the agents and starts them, and the agents they require. It
waits until each is ready (its readiness check passed) and exits 0, or
with the code of the worst failure: 4 when an identity is held elsewhere,
1 for any other.`,
		example: "tether start alice bob\ntether start --no-wait alice"},
	{name: "stop", usage: "stop ID...", summary: "stop agents and keep them stopped",
		text: `Disables the agents and stops them (and the agents that require them
first). It exits 5 when a stop could not be confirmed: the identity stays
locked and tether keeps trying.`,
		example: "tether stop alice"},
	{name: "restart", usage: "restart [--no-wait] ID...", summary: "stop agents and start them again",
		text:    `Enables the agents, stops them and starts them again, with a fresh count of quick endings.`,
		example: "tether restart alice"},
	{name: "logs", usage: "logs ID...|--all [-f] [-n N] [--since D] [--json]", summary: "agents' logs (-f: follow them, -n: lines, default 50)",
		text: `Prints the last lines of the agents' logs, across their rotated files;
-f follows them across rotations. Several agents (or --all) are merged
in the order of the lines' times, each line after "ID |", coloured on a
terminal (NO_COLOR turns the colours off). --since D keeps the lines of
the last D (10m, 2h); --json prints one object a line: time, agent,
stream (stdout, stderr or guardian) and text.`,
		example: "tether logs alice -n 200\ntether logs -f alice bob\ntether logs --all --since 10m --json"},
	{name: "check", usage: "check", summary: "validate the config",
		text:    `Loads the config as the service would and says how many agents it has, or names the file, line and key of each problem.`,
		example: "tether check\ntether --config ~/bots.yaml check"},
	{name: "reload", usage: "reload", summary: "apply config changes (also SIGHUP to the service)",
		text: `Asks the running service to read its config again: new agents are added,
removed ones stopped, changed ones restarted. A config that does not load
is refused and the running one stays in force.`,
		example: "tether reload"},
	{name: "config", usage: "config init [--print]", summary: "write the default config out for editing",
		text: `Writes the default config, each key explained, where the config is read
from; a config already there is never overwritten. --print writes it to
standard output instead, to compare with or copy from.`,
		example: "tether config init && $EDITOR ~/.config/tether/agents.yaml\ntether config init --print | less"},
	{name: "secret", usage: "secret set ID NAME | secret ls ID", summary: "store an agent's secret in the OS keychain, or list its secrets",
		text: `set stores the value of secret NAME of agent ID (a secrets: {NAME:
{keyring: KEY}} of its entry) in the OS keychain, as the entry KEY of
service tether/PROFILE. It reads the value from standard input: on a
terminal it asks without echoing it, otherwise it takes everything,
without one trailing newline. Never give a value as an argument.
ls lists the agent's secrets: each name, where it is read from, and
whether its keychain entry is there; never a value.`,
		example: "tether secret set alice TOKEN                 # asks for it\nop read op://vault/alice/token | tether secret set alice TOKEN\ntether secret ls alice"},
	{name: "completion", usage: "completion bash|zsh|fish|powershell", summary: "print a shell completion script",
		text: `Prints a script that completes tether's commands, flags and agent ids
(those of the running service, else those of the config).`,
		example: "source <(tether completion bash)                       # in ~/.bashrc\ntether completion zsh > \"${fpath[1]}/_tether\"\ntether completion fish > ~/.config/fish/completions/tether.fish\ntether completion powershell | Out-String | Invoke-Expression   # in $PROFILE"},
	{name: "version", usage: "version", summary: "the version, commit and toolchain of this binary",
		example: "tether version"},
	{name: "help", usage: "help [COMMAND]", summary: "this list, or the help of one command",
		example: "tether help start"},
}

// globalUsage is the usage line of the whole command line.
const globalUsage = "usage: tether [--config FILE] [--profile NAME] COMMAND [ARGS]"

// exitCodesText is the command-line contract's exit codes.
const exitCodesText = `exit codes: 0 ok, 1 failure, 2 usage, 3 service not reachable,
            4 identity held elsewhere, 5 cleanup failed
`

// usageText is the usage of the whole command line: every command with
// its summary.
func usageText() string {
	var b strings.Builder
	b.WriteString(globalUsage + "\n\ncommands:\n")
	const col = 26
	for _, d := range docs {
		if len(d.usage) > col {
			// Too long for the column: the summary goes below it.
			fmt.Fprintf(&b, "  %s\n  %-*s %s\n", d.usage, col, "", d.summary)
			continue
		}
		fmt.Fprintf(&b, "  %-*s %s\n", col, d.usage, d.summary)
	}
	for i, line := range strings.Split(globalFlagsText, "\n") {
		lead := "\nglobal flags: "
		if i > 0 {
			lead = "              "
		}
		b.WriteString(lead + line + "\n")
	}
	b.WriteString("\n")
	b.WriteString(exitCodesText)
	b.WriteString("\n`tether help COMMAND` says more of each.\n")
	return b.String()
}

// globalFlagsText is the global flags, one a line.
const globalFlagsText = "--config FILE (the config; default " + defaultConfigHint + ")\n" +
	"--profile NAME (one service and its agents; default \"default\")"

// defaultConfigHint names the default config file in the usage.
const defaultConfigHint = "agents.yaml in the user's config directory"

// findDoc returns the help of a command.
func findDoc(name string) (doc, bool) {
	i := slices.IndexFunc(docs, func(d doc) bool { return d.name == name })
	if i < 0 {
		return doc{}, false
	}
	return docs[i], true
}

// commandNames lists the commands a user may type, in the usage's order.
func commandNames() []string {
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.name
	}
	return names
}

// writeHelp prints the help of d.
func writeHelp(w io.Writer, d doc) {
	if d.name == "status" {
		// Its help is the long one, with every state and code.
		fmt.Fprint(w, statusHelp())
	} else {
		fmt.Fprintf(w, "usage: tether %s\n\n%s\n", d.usage, d.summary)
		if d.text != "" {
			fmt.Fprintf(w, "\n%s\n", d.text)
		}
	}
	fmt.Fprintln(w, "\nexample:")
	for line := range strings.SplitSeq(d.example, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
}

// help runs `tether help [COMMAND]`.
func (inv *invocation) help(args []string) int {
	switch len(args) {
	case 0:
		fmt.Fprint(inv.stdout, usageText())
		return ExitOK
	case 1, 2: // "help service install" is the help of service
		d, ok := findDoc(args[0])
		if !ok {
			return inv.usage(unknownCommand("help: unknown command", args[0]))
		}
		writeHelp(inv.stdout, d)
		return ExitOK
	}
	return inv.usage(fmt.Errorf("usage: tether help [COMMAND]"))
}

// asksHelp reports whether args, before any "--", ask for help.
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// unknownCommand is the usage error of a command that does not exist,
// with the closest one when it is likely a typo.
func unknownCommand(what, name string) error {
	if s := suggest.Best(name, commandNames()); s != "" {
		return fmt.Errorf("%s %q; did you mean %q?", what, name, s)
	}
	return fmt.Errorf("%s %q", what, name)
}
