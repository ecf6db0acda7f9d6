package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/install"
	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/service/upgrade"
)

// serviceManager handles "service install|uninstall|start|stop|status",
// the registration of the profile's service with the OS.
func (inv *invocation) serviceManager(p service.Paths, args []string) int {
	verb := args[0]
	switch verb {
	case "upgrade":
		return inv.upgrade(p, args[1:])
	case "handover-check":
		return upgrade.HandoverCheck(Version, os.Stdin, inv.stdout, service.ServeStandIn)
	}
	fs := newFlags("service "+verb, inv)
	printOnly := fs.Bool("print", false, "show exactly what would be written, and write nothing")
	noStart := new(bool)
	if verb == "install" {
		noStart = fs.Bool("no-start", false, "register the service, and start nothing now")
	}
	if err := parseFlags(fs, args[1:]); err != nil || fs.NArg() > 0 {
		return inv.commandUsage(err, fmt.Sprintf("usage: tether service %s [--print]", verb))
	}
	o, err := inv.installOptions(p)
	if err != nil {
		return inv.fail("%v", err)
	}
	if *printOnly {
		if verb != "install" {
			return inv.usage(fmt.Errorf("--print goes with install"))
		}
		return inv.printPlan(o)
	}
	switch verb {
	case "install":
		return inv.install(p, o, !*noStart)
	case "uninstall":
		return inv.uninstall(p, o)
	case "start":
		return inv.startService(p, o)
	case "stop":
		return inv.stopService(p, o)
	case "status":
		return inv.serviceStatus(p, o)
	}
	return inv.usage(fmt.Errorf("unknown service command %q", verb))
}

// printPlan shows the files "service install" would write, and those the
// tray's "Start at login" writes besides (its autostart entry).
func (inv *invocation) printPlan(o install.Options) int {
	files, err := install.Plan(o)
	if err != nil {
		return inv.fail("%v", err)
	}
	tray, err := install.PlanTrayAutostart(o)
	if err != nil {
		return inv.fail("%v", err)
	}
	show := func(f install.File) {
		if bytes.HasPrefix(f.Content, []byte("\x89PNG")) {
			fmt.Fprintf(inv.stdout, "# %s (mode %v)\n(a PNG image, %d bytes)\n\n", f.Path, f.Mode, len(f.Content))
			return
		}
		fmt.Fprintf(inv.stdout, "# %s (mode %v)\n%s\n", f.Path, f.Mode, f.Content)
	}
	for _, f := range files {
		show(f)
	}
	fmt.Fprintln(inv.stdout, "# The tray's \"Start at login\" writes these as well:")
	for _, f := range tray {
		show(f)
	}
	return ExitOK
}

// stopService stops the registered service through its manager or,
// where there is none to ask (Windows Run key) or none registered while
// a `service run` answers, through the local API.
func (inv *invocation) stopService(p service.Paths, o install.Options) int {
	err := install.Stop(o)
	// Without a manager, or with one that has no service registered
	// while a `service run` answers, the service that runs is asked to
	// quit: it is the one the person means. Its lock is looked at only
	// then.
	runs := func() bool { _, ok := service.RunningPID(p); return ok }
	if errors.Is(err, install.ErrNoServiceManager) || errors.Is(err, install.ErrNotInstalled) && runs() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if qerr := client.New(p.Socket).Quit(ctx); qerr != nil {
			return inv.apiFailure(p, qerr)
		}
		err = nil
	}
	if err != nil {
		return inv.installFailure(err)
	}
	fmt.Fprintln(inv.stdout, "stopped")
	return ExitOK
}

// serviceStatus prints one line: the manager, the unit and its file,
// whether it is installed and current, and whether it runs.
func (inv *invocation) serviceStatus(p service.Paths, o install.Options) int {
	st, err := install.Status(o)
	if err != nil {
		return inv.installFailure(err)
	}
	installed := "not installed"
	if st.Installed {
		installed = "installed"
		if !st.Current {
			installed += " (out of date: run tether service install again)"
		}
	}
	state, detail := string(st.State), st.Detail
	if pid, ok := service.RunningPID(p); ok && st.State != install.StateRunning {
		// A service that the manager did not start: a `service run`.
		state, detail = "running", fmt.Sprintf("pid %d, not managed by %s", pid, st.Manager)
	}
	fmt.Fprintf(inv.stdout, "%s %s (%s): %s, %s", st.Manager, st.Name, st.Path, installed, state)
	if detail != "" {
		fmt.Fprintf(inv.stdout, " (%s)", detail)
	}
	if atLogin, err := install.StartsAtLogin(o); err == nil {
		fmt.Fprintf(inv.stdout, "; %s at login", map[bool]string{true: "starts", false: "does not start"}[atLogin])
	}
	fmt.Fprintln(inv.stdout)
	return ExitOK
}

func (inv *invocation) installFailure(err error) int {
	fmt.Fprintln(inv.stderr, "tether service:", err)
	if errors.Is(err, install.ErrNoServiceManager) {
		fmt.Fprintln(inv.stderr, "Run the service in the foreground instead: tether service run")
	}
	return ExitFailure
}
