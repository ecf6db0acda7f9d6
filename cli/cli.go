// Package cli is tether's command line: it parses the command-line
// contract and hands each command to the package that owns it. It holds
// no state of its own. Its own are the words: each command's help and
// example (help.go), "did you mean" for a mistyped command or agent id
// (suggest.go), the version from package buildinfo (version.go), and the
// shell completion scripts with the hidden __complete they call
// (complete.go).
//
// A running service is reached only through package api, its client over
// the local socket (status, start, stop, restart, logs, reload, and
// "service stop" where no OS service manager can stop it). Package service
// is used in this process for what needs no running service: the profile's
// paths, "check" (the config loaded as the service loads it), and
// "service run", which becomes the service; package service/secret for
// "secret set" and "secret ls", which store and look up the agents'
// keychain entries without the service. Package install registers the
// service with the OS, package config writes the default config, and
// "guardian", "demo" and "tray" are handed to their packages whole.
//
// Only main imports it.
package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tether-dev/tether/demo"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/buildinfo"
	"github.com/tether-dev/tether/internal/suggest"
	"github.com/tether-dev/tether/tray"
)

// Exit codes of the command-line contract.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitUnreachable = 3
	ExitContention  = 4
	ExitCleanup     = 5
)

// Version is this binary's version, as the service reports it (package
// buildinfo).
var Version = buildinfo.Get().Version

// globals are the flags every command takes.
type globals struct {
	config  string
	profile string
}

// invocation is one run of the command line: its global flags and where
// its output goes. Each command is a method on it.
type invocation struct {
	g      globals
	stdout io.Writer
	stderr io.Writer
}

// Main runs the command line and returns the exit code.
func Main(args []string) int { return run(args, os.Stdout, os.Stderr) }

// run is Main with its output streams.
func run(args []string, stdout, stderr io.Writer) int {
	g, args, err := parseGlobals(args)
	inv := &invocation{g: g, stdout: stdout, stderr: stderr}
	if err != nil {
		return inv.usage(err)
	}
	if len(args) == 0 {
		if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
			return inv.tray(nil)
		}
		fmt.Fprint(inv.stdout, usageText())
		return ExitOK
	}
	cmd, rest := args[0], args[1:]
	if cmd != "tray" {
		releaseMainThread()
	}
	if d, ok := findDoc(cmd); ok && asksHelp(rest) {
		// tether CMD --help: the same as tether help CMD.
		writeHelp(inv.stdout, d)
		return ExitOK
	}
	switch cmd {
	case "guardian":
		return guardian.Main(rest)
	case "demo":
		return demo.Run(rest)
	case "demo-agent":
		return demo.Agent(rest)
	case "version", "--version":
		return inv.version(rest)
	case "help":
		return inv.help(rest)
	case "-h", "-help", "--help":
		fmt.Fprint(inv.stdout, usageText())
		return ExitOK
	case "completion":
		return inv.completion(rest)
	case completeCmd:
		return inv.complete(rest)
	case distfilesCmd:
		return inv.distfiles(rest)
	case "tray":
		return inv.tray(rest)
	case "service":
		return inv.service(rest)
	case "status":
		return inv.status(rest)
	case "top":
		return inv.top(rest)
	case "start", "stop", "restart":
		return inv.action(cmd, rest)
	case "logs":
		return inv.logs(rest)
	case "check":
		return inv.check(rest)
	case "reload":
		return inv.reload(rest)
	case "config":
		return inv.configCmd(rest)
	case "secret":
		return inv.secretCmd(rest)
	default:
		if strings.HasPrefix(cmd, "-") {
			// A global flag mistyped, before the command.
			return inv.usage(&unknownFlagError{Flag: cmd, Meant: suggest.Best(strings.TrimLeft(cmd, "-"), globalFlagNames())})
		}
		return inv.usage(unknownCommand("unknown command", cmd))
	}
}

// releaseMainThread undoes the lock of the main goroutine to the main
// thread that fyne.io/systray takes at its init, which only the tray
// needs (macOS runs its event loop there). Locked, the main goroutine
// makes the runtime hand every other goroutine to another thread each
// time it blocks: a guardian then runs seven to ten threads instead of
// three or four, each with its stacks, and pays a wakeup of another
// thread for each message. A second call, or one where the lock was
// never taken, does nothing.
func releaseMainThread() { runtime.UnlockOSThread() }

// usage answers a command line that names no command tether has, or
// global flags used wrongly: what was wrong, the one global usage line,
// and where the commands are listed.
func (inv *invocation) usage(err error) int {
	fmt.Fprintln(inv.stderr, "tether:", err)
	fmt.Fprintln(inv.stderr, globalUsage)
	fmt.Fprintln(inv.stderr, `"tether help" lists the commands`)
	return ExitUsage
}

// tray runs the system tray of the profile's service.
func (inv *invocation) tray(args []string) int {
	p, err := inv.paths()
	if err != nil {
		return inv.fail("%v", err)
	}
	return tray.Main(tray.Options{
		Profile: inv.g.profile, ConfigFlag: inv.g.config, ConfigFile: p.Config,
		LogDir: p.LogDir, ServiceLog: filepath.Join(p.StateDir, "service.log"), StateDir: p.StateDir,
		Socket: p.Socket, Args: args, Stderr: inv.stderr,
	})
}

func (inv *invocation) fail(format string, args ...any) int {
	fmt.Fprintf(inv.stderr, "tether: "+format+"\n", args...)
	return ExitFailure
}

// parseGlobals removes --config and --profile (as "--flag value" or
// "--flag=value") from anywhere before a "--".
func parseGlobals(args []string) (globals, []string, error) {
	var g globals
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return g, append(out, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name != "--config" && name != "--profile" {
			out = append(out, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return g, nil, fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if value == "" {
			return g, nil, fmt.Errorf("%s needs a value", name)
		}
		if name == "--config" {
			g.config = value
		} else {
			g.profile = value
		}
	}
	return g, out, nil
}
