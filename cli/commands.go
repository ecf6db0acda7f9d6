package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/service/config"
)

func (e *env) paths() (service.Paths, error) {
	return service.ResolvePaths(e.g.profile, e.g.config)
}

// client returns an API client for the profile's service.
func (e *env) client() (*api.Client, service.Paths, error) {
	p, err := e.paths()
	if err != nil {
		return nil, p, err
	}
	return api.NewClient(p.Socket), p, nil
}

// apiFailure turns a client error into a message and an exit code.
func (e *env) apiFailure(p service.Paths, err error) int {
	if errors.Is(err, api.ErrNotRunning) {
		fmt.Fprintf(e.stderr, "tether: no service is running for profile %q (%s).\n", p.Profile, p.Socket)
		fmt.Fprintf(e.stderr, "Start one with \"tether%s service run\", or \"tether%s service start\" if it is installed.\n", e.flagsHint(), e.flagsHint())
		return ExitUnreachable
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		fmt.Fprintf(e.stderr, "tether: %s\n", ae.Message)
		return codeExit(ae.Code)
	}
	fmt.Fprintf(e.stderr, "tether: %v\n", err)
	return ExitFailure
}

func (e *env) flagsHint() string {
	var b strings.Builder
	if e.g.profile != "" {
		b.WriteString(" --profile " + e.g.profile)
	}
	if e.g.config != "" {
		b.WriteString(" --config " + e.g.config)
	}
	return b.String()
}

// codeExit maps an API error code to the exit code of the contract.
func codeExit(code string) int {
	switch code {
	case api.CodeContention:
		return ExitContention
	case api.CodeCleanupFailed:
		return ExitCleanup
	default:
		return ExitFailure
	}
}

func newFlags(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

func (e *env) status(args []string) int {
	fs := newFlags("status", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return e.usage(fmt.Errorf("usage: tether status [--json]"))
	}
	c, p, err := e.client()
	if err != nil {
		return e.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return e.apiFailure(p, err)
	}
	if *asJSON {
		return e.statusJSON(st)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tIDENTITY\tSTATE\tPID\tCONTAINMENT\tSINCE\tRESTARTS\tERROR")
	for _, a := range st.Agents {
		pid, containment := "-", "-"
		if a.PID > 0 {
			pid = strconv.Itoa(a.PID)
		}
		if a.Containment != "" {
			containment = string(a.Containment)
		}
		msg := ""
		if a.Error != nil {
			msg = a.Error.Code + ": " + oneLine(a.Error.Message, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", a.ID, a.Identity, a.State, pid, containment, ago(a.Since), a.Restarts, msg)
	}
	tw.Flush()
	if st.StateError != nil {
		fmt.Fprintf(e.stderr, "tether: state file problem: %s\n", st.StateError.Message)
	}
	if st.ConfigError != nil {
		fmt.Fprintf(e.stderr, "tether: the last reload was rejected: %s\n", st.ConfigError.Message)
	}
	return ExitOK
}

// statusRow is one agent in "status --json", as the contract names it.
type statusRow struct {
	ID          string     `json:"id"`
	Identity    string     `json:"identity"`
	State       string     `json:"state"`
	PID         int        `json:"pid"`
	GuardianPID int        `json:"guardian_pid"`
	Since       time.Time  `json:"since"`
	Restarts    int        `json:"restarts"`
	Error       *api.Error `json:"error"`
}

func (e *env) statusJSON(st api.Status) int {
	out := struct {
		Agents     []statusRow `json:"agents"`
		StateError *api.Error  `json:"state_error,omitempty"`
	}{Agents: []statusRow{}, StateError: st.StateError}
	for _, a := range st.Agents {
		out.Agents = append(out.Agents, statusRow{a.ID, a.Identity, a.State, a.PID, a.GuardianPID, a.Since, a.Restarts, a.Error})
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return e.fail("%v", err)
	}
	return ExitOK
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// action runs start, stop or restart on several ids. The exit code is
// that of the worst outcome: cleanup (5) over contention (4) over any
// other failure (1).
func (e *env) action(verb string, args []string) int {
	if len(args) == 0 {
		return e.usage(fmt.Errorf("usage: tether %s ID [ID]", verb))
	}
	c, p, err := e.client()
	if err != nil {
		return e.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var res api.Results
	switch verb {
	case "start":
		res, err = c.Start(ctx, args...)
	case "stop":
		res, err = c.Stop(ctx, args...)
	default:
		res, err = c.Restart(ctx, args...)
	}
	if err != nil {
		return e.apiFailure(p, err)
	}
	code := ExitOK
	for _, r := range res.Results {
		if r.Error == nil {
			state := ""
			if r.Agent != nil {
				state = r.Agent.State
				if r.Agent.PID > 0 {
					state += fmt.Sprintf(" (pid %d)", r.Agent.PID)
				}
			}
			fmt.Fprintf(e.stdout, "%s: %s\n", r.ID, state)
			continue
		}
		fmt.Fprintf(e.stderr, "tether %s %s: %s\n", verb, r.ID, r.Error.Message)
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

func (e *env) logs(args []string) int {
	fs := newFlags("logs", e)
	follow := fs.Bool("f", false, "follow")
	n := fs.Int("n", 50, "lines")
	// Accept the id before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 || id == "" || *n < 0 {
		return e.usage(fmt.Errorf("usage: tether logs ID [-f] [-n N]"))
	}
	c, p, err := e.client()
	if err != nil {
		return e.fail("%v", err)
	}
	ctx := context.Background()
	if *follow {
		// The tail and the follow come from one point in the file.
		return e.followLogs(c, p, id, *n)
	}
	if *n > 0 {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lg, err := c.Logs(tctx, id, *n)
		cancel()
		if err != nil {
			return e.apiFailure(p, err)
		}
		for _, l := range lg.Lines {
			fmt.Fprintln(e.stdout, l)
		}
	}
	return ExitOK
}

func (e *env) check(args []string) int {
	if len(args) > 0 {
		return e.usage(fmt.Errorf("usage: tether check"))
	}
	p, err := e.paths()
	if err != nil {
		return e.fail("%v", err)
	}
	cfg, err := service.LoadConfig(p)
	if err != nil {
		fmt.Fprintln(e.stderr, "tether check:", err)
		return ExitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %s: %d agent(s)\n", cfg.Path, len(cfg.Agents))
	return ExitOK
}

func (e *env) reload(args []string) int {
	if len(args) > 0 {
		return e.usage(fmt.Errorf("usage: tether reload"))
	}
	c, p, err := e.client()
	if err != nil {
		return e.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Reload(ctx); err != nil {
		return e.apiFailure(p, err)
	}
	fmt.Fprintln(e.stdout, "reloaded")
	return ExitOK
}

func (e *env) configCmd(args []string) int {
	if len(args) != 1 || args[0] != "init" {
		return e.usage(fmt.Errorf("usage: tether config init"))
	}
	p, err := e.paths()
	if err != nil {
		return e.fail("%v", err)
	}
	if err := config.WriteDefault(p.Config); err != nil {
		if errors.Is(err, config.ErrExists) {
			return e.fail("%s already exists; not overwriting it", p.Config)
		}
		return e.fail("%v", err)
	}
	fmt.Fprintf(e.stdout, "wrote %s\n", p.Config)
	return ExitOK
}

func (e *env) service(args []string) int {
	if len(args) == 0 {
		return e.usage(fmt.Errorf("usage: tether service run|install|uninstall|start|stop|status [--print]"))
	}
	p, err := e.paths()
	if err != nil {
		return e.fail("%v", err)
	}
	if args[0] == "run" {
		if len(args) > 1 {
			return e.usage(fmt.Errorf("usage: tether service run"))
		}
		exe, err := os.Executable()
		if err != nil {
			return e.fail("%v", err)
		}
		return service.Run(p, exe, e.stderr)
	}
	return e.serviceManager(p, args)
}
