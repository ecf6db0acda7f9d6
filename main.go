// Command tether keeps local agent sessions on a leash: one identity, one
// execution, and nothing left behind when its owner dies.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tether-dev/tether/demo"
	"github.com/tether-dev/tether/guardian"
)

// version is set at link time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: tether [--config FILE] [--profile NAME] COMMAND [ARGS]

commands:
  tray                       the system tray (also a bare "tether" on a desktop)
  demo                       self-contained crash-survival demo in a temp dir
  service run                run the service in the foreground
  service install|uninstall|start|stop|status [--print]
  status [--json]            one row per agent
  start|stop|restart ID...
  logs ID [-f] [-n N]
  check                      validate the config
  reload                     apply config changes
  config init                write the default config out for editing
  version
`

// Exit codes of the command-line contract.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	args, err := stripGlobalFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tether:", err)
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
	if len(args) == 0 {
		if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
			return notBuilt("tray")
		}
		fmt.Print(usage)
		return exitOK
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "guardian":
		return guardian.Main(rest)
	case "demo":
		return demo.Run(rest)
	case "demo-agent":
		return demo.Agent(rest)
	case "version", "--version":
		fmt.Println("tether", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Print(usage)
		return exitOK
	case "tray", "service", "status", "start", "stop", "restart", "logs", "check", "reload", "config":
		return notBuilt(cmd)
	default:
		fmt.Fprintf(os.Stderr, "tether: unknown command %q\n", cmd)
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
}

func notBuilt(cmd string) int {
	fmt.Fprintf(os.Stderr, "tether %s: not built yet in this version\n", cmd)
	return exitUsage
}

// stripGlobalFlags removes --config and --profile (in either "--flag value"
// or "--flag=value" form) from args. Their values are not used by any
// command built so far.
func stripGlobalFlags(args []string) ([]string, error) {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		name, _, hasValue := strings.Cut(a, "=")
		if name != "--config" && name != "--profile" {
			out = append(out, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s needs a value", name)
			}
			i++
		}
	}
	return out, nil
}
