package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/internal/rowtext"
	"github.com/tether-dev/tether/service"
	"github.com/tether-dev/tether/wire"
)

// status prints one row per agent, as a table or, with --json, as JSON,
// each with what its tree costs (measured for this request); --help
// prints statusHelp.
func (inv *invocation) status(args []string) int {
	fs := newFlags("status", inv)
	asJSON := fs.Bool("json", false, "print JSON")
	wide := fs.Bool("wide", false, "never cut the ERROR column")
	if err := parseFlags(fs, args); err != nil || fs.NArg() > 0 {
		return inv.commandUsage(err, "usage: tether status [--json] [--wide]")
	}
	c, p, err := inv.client()
	if err != nil {
		return inv.fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.StatusWithUsage(ctx)
	if errors.Is(err, client.ErrNotRunning) {
		// Agents that outlived their service still show.
		st.Agents = inv.waitingRows(ctx, p)
		code := inv.apiFailure(p, err)
		if len(st.Agents) > 0 {
			fmt.Fprintf(inv.stderr, "%s outlived the service and wait to be adopted by the next one (survive_service_crash):\n", human.Count(len(st.Agents), "agent", "agents"))
			if *asJSON {
				inv.statusJSON(st)
			} else {
				writeStatusTable(inv.stdout, st, inv.tableWidth(*wide), time.Now())
			}
		}
		return code
	}
	if err != nil {
		return inv.apiFailure(p, err)
	}
	if *asJSON {
		return inv.statusJSON(st)
	}
	writeStatusTable(inv.stdout, st, inv.tableWidth(*wide), time.Now())
	writeServiceLine(inv.stdout, st)
	for _, a := range st.Agents {
		if a.IntentError != nil {
			fmt.Fprintf(inv.stderr, "tether: %s: intent not saved: %s\n", a.ID, a.IntentError.Message)
		}
	}
	if st.StateError != nil {
		fmt.Fprintf(inv.stderr, "tether: state file problem: %s\n", st.StateError.Message)
	}
	if st.ConfigError != nil {
		fmt.Fprintf(inv.stderr, "tether: the last reload was rejected: %s\n", st.ConfigError.Message)
	}
	return ExitOK
}

// tableWidth is how wide a row of the table may be: the terminal's
// width, so that each row keeps to its line; where the output goes
// elsewhere (a file, a pipe, a program), or with --wide, rows are whole
// (0).
func (inv *invocation) tableWidth(wide bool) int {
	if wide || !isTerminal(inv.stdout) {
		return 0
	}
	return terminalWidth(inv.stdout)
}

// statusColumns are the table's columns; the last one, ERROR, takes the
// room the others leave.
var statusColumns = []string{"ID", "IDENTITY", "STATE", "PID", "CONTAINMENT", "CPU", "MEM", "SINCE", "RESTARTS", "ERROR"}

// columnGap is the room between two columns.
const columnGap = 2

// writeStatusTable writes the rows of st as a table, at now. With a
// width, the last column is cut so that a row fits in it (though never
// to less than minErrorWidth); 0 leaves it whole.
func writeStatusTable(w io.Writer, st api.Status, width int, now time.Time) {
	rows := [][]string{statusColumns}
	for _, a := range st.Agents {
		pid, containment := "-", "-"
		if n := rowtext.PID(a); n > 0 {
			pid = strconv.Itoa(n)
		}
		if a.Containment != "" {
			containment = string(a.Containment)
		}
		cpu, mem := usageColumns(a.Usage)
		rows = append(rows, []string{a.ID, a.Identity, string(a.State), pid, containment, cpu, mem, ago(a.Since), strconv.Itoa(a.Restarts), rowNote(a, now)})
	}
	last := len(statusColumns) - 1
	widths := make([]int, last)
	for _, r := range rows {
		for i, c := range r[:last] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	room := 0
	if width > 0 {
		used := 0
		for _, n := range widths {
			used += n + columnGap
		}
		room = max(width-used, minErrorWidth)
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for i, c := range r[:last] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+columnGap))
		}
		b.WriteString(cut(r[last], room))
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// minErrorWidth is the least the ERROR column is cut to, on a terminal
// too narrow for the columns before it: the row wraps, and the cause
// can still be read.
const minErrorWidth = 24

// rowNote is the ERROR column of a: its error, cause first, then its
// code and when it happened; without one, what it waits for (how long so
// far, at now) and its own status.
func rowNote(a api.Agent, now time.Time) string {
	if e := a.Error; e != nil {
		what := string(e.Code)
		if !e.Time.IsZero() {
			what += ", " + clockAt(e.Time, now)
		}
		if msg := rowtext.Error(*e); msg != "" {
			return msg + " (" + what + ")"
		}
		return what
	}
	return rowtext.Note(a, now)
}

// clockAt is when t was, seen at now: its time of day within the last
// 20 hours, its date and time before.
func clockAt(t, now time.Time) string {
	t = t.Local()
	if now.Sub(t) < 20*time.Hour {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 02 15:04")
}

// waitingRows are the rows of the agents of the profile whose guardians
// wait to be adopted, while no service runs: state adoptable, the status
// saying until when.
func (inv *invocation) waitingRows(ctx context.Context, p service.Paths) []api.Agent {
	ws, _ := client.WaitingToBeAdopted(ctx, p.Socket, p.Profile)
	ids := map[string]string{}
	if cfg, err := service.LoadConfig(p); err == nil {
		for _, a := range cfg.Agents {
			ids[a.Identity] = a.ID
		}
	}
	var rows []api.Agent
	for _, w := range ws {
		id := ids[w.Identity]
		if id == "" {
			id = "-"
		}
		rows = append(rows, api.Agent{ID: id, Identity: w.Identity, State: api.StateAdoptable, PID: w.AgentPID,
			GuardianPID: w.GuardianPID, Since: w.Orphaned,
			Status: fmt.Sprintf("waiting to be adopted until %s (in %s)", w.Until.Local().Format("15:04:05"), human.Duration(time.Until(w.Until).Round(time.Second)))})
	}
	return rows
}

// statusRow is one agent in "status --json", as the contract names it:
// State is one of api.States, Error nil or one of api.AgentCodes.
type statusRow struct {
	ID          string       `json:"id"`
	Identity    string       `json:"identity"`
	State       api.State    `json:"state"`
	PID         int          `json:"pid"`
	GuardianPID int          `json:"guardian_pid"`
	Since       time.Time    `json:"since"`
	Restarts    int          `json:"restarts"`
	Error       *api.Error   `json:"error"`
	Status      string       `json:"status,omitempty"`
	Waiting     *api.Waiting `json:"waiting,omitempty"`
	IntentError *api.Error   `json:"intent_error,omitempty"`
	Usage       *api.Usage   `json:"usage,omitempty"`
}

// writeServiceLine writes the line under the table that says which
// tether the service runs: its version, the commit and its date as
// `tether version` of its binary says them, and its pid. Nothing when
// no service answered.
func writeServiceLine(w io.Writer, st api.Status) {
	s := st.Service
	if s == nil {
		return
	}
	commit := "commit unknown"
	if s.Commit != "" {
		commit = commitText(s.Commit, s.Date, s.Modified)
	}
	fmt.Fprintf(w, "service: tether %s, %s, pid %d\n", s.Version, commit, st.ServicePID)
}

// statusService is the service in "status --json": the tether it runs.
type statusService struct {
	Version    string    `json:"version"`
	Commit     string    `json:"commit,omitempty"`
	Date       string    `json:"date,omitempty"`
	Modified   bool      `json:"modified,omitempty"`
	PID        int       `json:"pid"`
	Executable string    `json:"executable"`
	Started    time.Time `json:"started"`
}

// statusJSON prints the status as statusHelp describes it: the service,
// the rows, the state file's problem (code state) and the rejected
// config (code config) when there are.
func (inv *invocation) statusJSON(st api.Status) int {
	out := struct {
		Service     *statusService `json:"service,omitempty"`
		Agents      []statusRow    `json:"agents"`
		StateError  *api.Error     `json:"state_error,omitempty"`
		ConfigError *api.Error     `json:"config_error,omitempty"`
	}{Agents: []statusRow{}, StateError: st.StateError, ConfigError: st.ConfigError}
	if s := st.Service; s != nil {
		out.Service = &statusService{Version: s.Version, Commit: s.Commit, Date: s.Date, Modified: s.Modified, PID: st.ServicePID, Executable: s.Executable, Started: s.Started}
	}
	for _, a := range st.Agents {
		out.Agents = append(out.Agents, statusRow{a.ID, a.Identity, a.State, a.PID, a.GuardianPID, a.Since, a.Restarts, a.Error, a.Status, a.Waiting, a.IntentError, a.Usage})
	}
	enc := json.NewEncoder(inv.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return inv.fail("%v", err)
	}
	return ExitOK
}

// cut puts s on one line, cut to n runes (n 0: whole), a cut marked
// with "…".
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		s = string(r[:n-1]) + "…"
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

// stateHelp says what each state means to the user, in the order of
// api.States.
var stateHelp = []struct {
	state api.State
	help  string
}{
	{api.StateStopped, "not running: stopped, or it ended cleanly and its policy keeps it so"},
	{api.StateStarting, "on its way: waiting for the agents it comes after, or not ready yet"},
	{api.StateRunning, "it runs and is ready, and its guardian holds its identity"},
	{api.StateStopping, "its guardian is stopping its processes"},
	{api.StateBackoff, "it ended, or its identity is held elsewhere: started again after a pause"},
	{api.StateFailed, "not started again until you start it; error says why"},
	{api.StateCleanupFailed, "its processes could not be confirmed dead: identity kept locked, tether retries"},
	{api.StateHeldElsewhere, "its identity is held in etcd by another host or profile (named): starts when that one lets go"},
	{api.StateAdoptable, "its service died; by survive_service_crash it runs on, waiting for the next service (shown while none runs)"},
	{api.StateOffline, "what it needs (needs:) is unreachable: it waits, and starts once it is reachable again"},
}

// containmentHelp says what each containment rung means to the user.
var containmentHelp = []struct {
	containment wire.Containment
	help        string
}{
	{wire.ContainmentCgroup, "a cgroup of its own: everything it starts is in it and is killed with it"},
	{wire.ContainmentScope, "the same, inside a transient scope from your systemd user manager"},
	{wire.ContainmentSession, "no cgroup could be had: its session, and tether catching what leaves it"},
	{wire.ContainmentJob, "Windows: a job object that ends with its guardian"},
}

// codeHelp says what each code an agent's row can carry means to the
// user, in the order of api.AgentCodes.
var codeHelp = []struct {
	code api.Code
	help string
}{
	{api.CodeContention, "its identity is held elsewhere (another profile or tether); start exits 4"},
	{api.CodeCleanupFailed, "its processes, private dir or cgroup could not be cleaned up; stop exits 5"},
	{api.CodeSpawn, "its command could not be started: not found, not executable, bad dir"},
	{api.CodeConfig, "its env_file could not be read when it started"},
	{api.CodeLock, "its identity's lock file or owner record could not be used (unsafe, EACCES, ENOSPC)"},
	{api.CodePrivateDir, "its private directory could not be made (unsafe, EACCES, ENOSPC)"},
	{api.CodeInternal, "its guardian died, or something else went wrong; the message says what"},
	{api.CodeExited, "it ended on its own with a non-zero status or a signal, or left processes that tether stopped"},
	{api.CodeCrashLoop, "it failed as often as its restart: crash_loop allows, within its window: not restarted"},
	{api.CodeNotReady, "its readiness check did not pass within start_timeout: stopped, not restarted"},
	{api.CodeWatchdog, "it missed its watchdog ping (or sent WATCHDOG=trigger): restarted by its policy"},
	{api.CodeUnhealthy, "its health check failed too often in a row: restarted by its policy"},
	{api.CodeDependency, "an agent it requires could not run, or stopped; the message names which"},
	{api.CodeLease, "its lease in etcd could not be had or renewed in time (its tree was stopped first): retried"},
	{api.CodeUnreachable, "what it needs (needs:) was unreachable: it waits offline, not counted as a crash"},
	{api.CodeSecret, "a secret could not be read from the keychain or its command: not started, not retried"},
}

// statusHelp is the help of "tether status": the columns, the JSON, and
// each state and code a row can carry.
func statusHelp() string {
	var b strings.Builder
	b.WriteString(`usage: tether status [--json] [--wide]

One row per agent: its id, identity, state, pid, the containment its
running tree got, what its process tree costs (CPU: the processor time it
has used since it started; MEM: the memory it holds now), how long it has
been in that state, how often it was restarted, and its last error:
its cause first, then its code and when it happened (or, without one,
what a starting agent waits for and for how long so far, and the
agent's own STATUS= text). PID is shown only while the agent's process
may be alive: never on a stopped or failed row. On a terminal the error
is cut to the terminal's width; with --wide, or written to a file or a
pipe, it is whole. Under the table, a line says which tether the
service runs: its version, commit and date, and its pid.

--json prints the rows as JSON:

  {"service": {"version", "commit", "date", "modified", "pid",
               "executable", "started"},
   "agents": [{"id", "identity", "state", "pid", "guardian_pid", "since",
               "restarts", "error": null or {"code", "message", "time"},
               "status": the status text, when there is one,
               "waiting": {"for", "what", "agents", "since", "deadline"},
                 while a starting agent waits,
               "intent_error": {"code", "message"}, when there is one,
               "usage": {"cpu_seconds", "memory_bytes", "procs", "source"}}],
   "state_error": {"code", "message"},
   "config_error": {"code", "message"}}

"waiting" says what a starting agent waits for. "for" is its
readiness check (ready:), with "what" naming what the check looks at
(the log line's pattern, the address, the URL, the command, the
descriptor), or "agents", the agents it starts after, named in
"agents"; "deadline" is when a check that has not passed fails
(start_timeout). "for" is one of: ` + waitList() + `.
"error"."time" is when the error came.
"service" is the running service: its tether version (a service
upgraded in place reports the new one), the commit its binary was built
from and that commit's date (as its "tether version" says them; left
out when unknown, "modified" when the tree had changes not committed),
its pid, its binary, and when that binary began to serve. "since" and "started" are RFC 3339 times. "intent_error" (code ` + string(api.CodeState) + `) is there while the
agent's start or stop could not be saved: the service retries until it
is. "state_error" is there only when the state file cannot be used (code
` + string(api.CodeState) + `; the service goes on and leaves the file as it is), "config_error"
only when the last reload was rejected (code ` + string(api.CodeConfig) + `; the running config
stays in force). "usage" is measured for the request: "source" says how
(cgroup: the agent's cgroup's accounting; processes: the sum over its
live processes; job: its Windows job's accounting); an agent that does
not run has zeros and no source. A row whose tree could not be measured
has no "usage".

state is one of:
`)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, s := range stateHelp {
		fmt.Fprintf(tw, "  %s\t%s\n", s.state, s.help)
	}
	tw.Flush()
	b.WriteString("\ncontainment is one of, strongest first:\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range containmentHelp {
		fmt.Fprintf(tw, "  %s\t%s\n", c.containment, c.help)
	}
	tw.Flush()
	b.WriteString("\nerror.code is one of:\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range codeHelp {
		fmt.Fprintf(tw, "  %s\t%s\n", c.code, c.help)
	}
	tw.Flush()
	return b.String()
}

// usageColumns are the CPU and MEM columns of a row: "-" for an agent
// that does not run or could not be measured.
func usageColumns(u *api.Usage) (cpu, mem string) {
	if u == nil || u.Source == "" {
		return "-", "-"
	}
	return u.CPUText(), u.MemoryText()
}

// waitList names every wait, as the API lists them.
func waitList() string {
	ws := api.Waits()
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = string(w)
	}
	return strings.Join(s, ", ")
}
