package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/install"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/internal/rowtext"
	"github.com/tether-dev/tether/internal/suggest"
	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/service/config"
)

func (inv *invocation) paths() (service.Paths, error) {
	return service.ResolvePaths(inv.g.profile, inv.g.config)
}

// client returns an API client for the profile's service.
func (inv *invocation) client() (*client.Client, service.Paths, error) {
	p, err := inv.paths()
	if err != nil {
		return nil, p, err
	}
	return client.New(p.Socket), p, nil
}

// apiFailure turns a client error into a message and an exit code.
func (inv *invocation) apiFailure(p service.Paths, err error) int {
	switch {
	case errors.Is(err, client.ErrUntrusted):
		// Nothing was sent: the error names whose it is.
		fmt.Fprintf(inv.stderr, "tether: refusing to talk to what listens for profile %q: %v\n", p.Profile, err)
		return ExitUnreachable
	case errors.Is(err, client.ErrUnreachable):
		fmt.Fprintf(inv.stderr, "tether: the service of profile %q cannot be reached: %v\n", p.Profile, err)
		return ExitUnreachable
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		// It holds its socket and answers nothing: hung, stopped, or
		// a successor that has not served yet.
		fmt.Fprintf(inv.stderr, "tether: the service of profile %q did not answer in time (%v)\n", p.Profile, err)
		return ExitUnreachable
	}
	if errors.Is(err, client.ErrNotRunning) {
		if pid, ok := service.RunningPID(p); ok {
			fmt.Fprintf(inv.stderr, "tether: service pid %d of profile %q is running but its socket %s is gone; send it SIGHUP (kill -HUP %d) to make it listen again, or restart it.\n",
				pid, p.Profile, p.Socket, pid)
			return ExitUnreachable
		}
		fmt.Fprintf(inv.stderr, "tether: no service is running for profile %q (%s).\n", p.Profile, p.Socket)
		if inv.serviceInstalled(p) {
			fmt.Fprintf(inv.stderr, "Start it with \"tether%s service start\".\n", inv.flagsHint())
		} else {
			fmt.Fprintf(inv.stderr, "Start one with \"tether%s service run\"; \"tether%s service install\" makes it start at login.\n", inv.flagsHint(), inv.flagsHint())
		}
		return ExitUnreachable
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		fmt.Fprintf(inv.stderr, "tether: %s\n", ae.Message)
		return codeExit(ae.Code)
	}
	fmt.Fprintf(inv.stderr, "tether: %v\n", err)
	return ExitFailure
}

// serviceInstalled reports whether the profile's login service is
// installed with the OS's service manager.
func (inv *invocation) serviceInstalled(p service.Paths) bool {
	o, err := inv.installOptions(p)
	if err != nil {
		return false
	}
	_, ok, err := install.Installed(o)
	return ok && err == nil
}

func (inv *invocation) flagsHint() string {
	var b strings.Builder
	if inv.g.profile != "" {
		b.WriteString(" --profile " + inv.g.profile)
	}
	if inv.g.config != "" {
		b.WriteString(" --config " + inv.g.config)
	}
	return b.String()
}

// codeExit maps an API error code to the exit code of the contract.
func codeExit(code api.Code) int {
	switch code {
	case api.CodeContention:
		return ExitContention
	case api.CodeCleanupFailed:
		return ExitCleanup
	default:
		return ExitFailure
	}
}

// action runs start, stop or restart on several ids. The exit code is
// that of the worst outcome: cleanup (5) over contention (4) over any
// other failure (1).
func (inv *invocation) action(verb string, args []string) int {
	fs := newFlags(verb, inv)
	var noWait *bool
	if verb != "stop" {
		noWait = fs.Bool("no-wait", false, "answer once the agent is spawned, not once it is ready")
	}
	// The ids are written "ID...", as the contract writes them.
	usage := fmt.Sprintf("usage: tether %s [--no-wait] %s", verb, "ID...")
	if verb == "stop" {
		usage = fmt.Sprintf("usage: tether %s %s", verb, "ID...")
	}
	if err := parseFlags(fs, args); err != nil || fs.NArg() == 0 {
		return inv.commandUsage(err, usage)
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	// A start waits for readiness, which start_timeout bounds (at most a
	// day); the service answers when it passes or fails.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Hour)
	defer cancel()
	req := api.IDsRequest{IDs: fs.Args(), NoWait: noWait != nil && *noWait}
	path := map[string]string{"start": api.PathStart, "stop": api.PathStop, "restart": api.PathRestart}[verb]
	done := func() {}
	if verb != "stop" && !req.NoWait {
		// Until the service answers, a terminal shows what it waits for.
		done = inv.showProgress(c, req.IDs)
	}
	res, err := c.Action(ctx, path, req)
	done()
	if err != nil {
		return inv.apiFailure(p, err)
	}
	code := ExitOK
	var ids []string // the service's, for "did you mean", read once
	for _, r := range res.Results {
		if r.Error != nil && r.Error.Code == api.CodeNotFound {
			if ids == nil {
				ids = inv.serviceIDs(c)
			}
			r.Error.Message += didYouMean(r.ID, ids)
		}
		if r.Error == nil {
			state := ""
			if r.Agent != nil {
				state = string(r.Agent.State)
				if r.Agent.PID > 0 {
					state += fmt.Sprintf(" (pid %d)", r.Agent.PID)
				}
			}
			fmt.Fprintf(inv.stdout, "%s: %s\n", r.ID, state)
			continue
		}
		// Cause first, in a person's words, as status says it.
		fmt.Fprintf(inv.stderr, "tether %s %s: %s\n", verb, r.ID, rowtext.Error(*r.Error))
		code = worse(code, codeExit(r.Error.Code))
	}
	return code
}

func worse(a, b int) int {
	rank := map[int]int{ExitOK: 0, ExitFailure: 1, ExitContention: 2, ExitCleanup: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func (inv *invocation) check(args []string) int {
	if len(args) > 0 {
		return inv.commandUsage(nil, "usage: tether check")
	}
	p, err := inv.paths()
	if err != nil {
		return inv.fail("%v", err)
	}
	cfg, err := service.LoadConfig(p)
	if err == nil {
		// What the file cannot say: each dir exists and each command
		// resolves, in the environment a service started from here
		// would give it.
		err = service.CheckAgents(cfg, os.Environ())
	}
	if err != nil {
		fmt.Fprintln(inv.stderr, "tether check:", err)
		return ExitFailure
	}
	fmt.Fprintf(inv.stdout, "ok: %s: %s\n", cfg.Path, human.Count(len(cfg.Agents), "agent", "agents"))
	for _, w := range serviceWarnings(p, cfg) {
		fmt.Fprintln(inv.stderr, "tether check: warning:", w)
	}
	return ExitOK
}

func (inv *invocation) reload(args []string) int {
	if len(args) > 0 {
		return inv.commandUsage(nil, "usage: tether reload")
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done, err := c.Reload(ctx)
	if err != nil {
		return inv.apiFailure(p, err)
	}
	fmt.Fprintf(inv.stdout, "reloaded: %s\n", done.Summary())
	return ExitOK
}

func (inv *invocation) configCmd(args []string) int {
	const usage = "usage: tether config init [--print]"
	if len(args) == 0 || args[0] != "init" {
		return inv.commandUsage(nil, usage)
	}
	fs := newFlags("config init", inv)
	printOnly := fs.Bool("print", false, "write the default config to standard output")
	if err := parseFlags(fs, args[1:]); err != nil || fs.NArg() > 0 {
		return inv.commandUsage(err, usage)
	}
	if *printOnly {
		_, _ = inv.stdout.Write(config.Default())
		return ExitOK
	}
	p, err := inv.paths()
	if err != nil {
		return inv.fail("%v", err)
	}
	if err := config.WriteDefault(p.Config); err != nil {
		if errors.Is(err, config.ErrExists) {
			return inv.fail("%s already exists; not overwriting it (tether config init --print shows the default)", p.Config)
		}
		return inv.fail("%v", err)
	}
	fmt.Fprintf(inv.stdout, "wrote %s\n", p.Config)
	return ExitOK
}

func (inv *invocation) service(args []string) int {
	if len(args) == 0 {
		return inv.commandUsage(nil, "usage: tether service run|install|uninstall|start|stop|status|upgrade [--print]")
	}
	p, err := inv.paths()
	if err != nil {
		return inv.fail("%v", err)
	}
	// handover-check is the successor's side of an upgrade, not typed.
	if !slices.Contains(serviceVerbs, args[0]) && args[0] != "handover-check" {
		err := fmt.Errorf("unknown service command %q", args[0])
		if s := suggest.Best(args[0], serviceVerbs); s != "" {
			err = fmt.Errorf("%w; did you mean %q?", err, s)
		}
		return inv.usage(err)
	}
	if args[0] == "run" {
		if len(args) > 1 {
			return inv.commandUsage(nil, "usage: tether service run")
		}
		exe, err := os.Executable()
		if err != nil {
			return inv.fail("%v", err)
		}
		return service.Run(p, exe, Version, inv.stderr)
	}
	return inv.serviceManager(p, args)
}

// serviceIDs are the ids of the running service's agents, or none.
func (inv *invocation) serviceIDs(c *client.Client) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return nil
	}
	ids := make([]string, len(st.Agents))
	for i, a := range st.Agents {
		ids[i] = a.ID
	}
	return ids
}

// didYouMean is what to add to the message of an unknown id: the id of
// ids it most likely mistypes, if any.
func didYouMean(id string, ids []string) string {
	if s := suggest.Best(id, ids); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}
