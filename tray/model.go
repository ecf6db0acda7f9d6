package tray

import (
	"fmt"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/internal/rowtext"
	"github.com/tether-dev/tether/wire"
)

// conn is how the tray stands with the service.
type conn int

const (
	// connecting: the first attempt has not answered yet.
	connecting conn = iota
	// connected: the event stream is open and the status is current.
	connected
	// notRunning: no service listens on the profile's socket.
	notRunning
	// unreachable: a service may be there but cannot be talked to
	// (permission, a broken answer); ConnErr says why.
	unreachable
)

// recorded is an agent's last error and when the tray saw it.
type recorded struct {
	Err api.Error
	At  time.Time
}

// login is the state of the "Start at login" switch.
type login struct {
	Known bool // the registrations have been read
	On    bool // both the login service and the tray autostart are installed
	Busy  bool // installing or removing
}

// input is everything the menu is built from.
type input struct {
	Profile string
	Conn    conn
	ConnErr string     // why the service cannot be reached
	Status  api.Status // when connected
	// LastErrors holds, per agent id, the newest error the tray has seen.
	// The service clears an agent's error once it runs again; the tray
	// keeps showing it until a newer one replaces it.
	LastErrors      map[string]recorded
	Login           login
	StartingService bool // a "Start service" is under way
	Now             time.Time
	// AgeAsClock shows when each agent's state began ("since 14:02")
	// instead of how long ago ("2h"): for a binding that cannot rebuild
	// the menu as it opens, where an age would go stale.
	AgeAsClock bool
	// Slots is how many agent submenus the menu has room for; more agents
	// than that get more. See build.
	Slots int
	// Waiting are the agents that outlived their service (its crash, with
	// survive_service_crash) and wait to be adopted, while none runs.
	Waiting []wire.Waiting
	// Cost is what each running agent's tree cost when the menu last
	// opened, by agent id (see engine.costLoop).
	Cost map[string]api.Usage
}

// actionKind is what a menu item does.
type actionKind int

// Actions of the menu.
const (
	noAction actionKind = iota
	actStart
	actStop
	actRestart
	actOpenLog
	actOpenConfig
	actToggleLogin
	actStartService
	actReload
	actCopy
	actQuit
)

// action is what clicking an item does: Kind, on the agents IDs (for
// start, stop, restart and open log), or with Text (for copy).
type action struct {
	Kind actionKind
	IDs  []string
	Text string
}

// item is one entry of the menu. A separator has only Separator set.
type item struct {
	Title     string
	Tooltip   string
	Separator bool
	Enabled   bool
	Checkable bool
	Checked   bool
	Hidden    bool
	Action    action
	Children  []item
}

// menu is the whole tray: its icon, the icon's tooltip and the menu.
type menu struct {
	Icon    assets.State
	Tooltip string
	Items   []item
}

// Titles of the items the binding and the tests look for.
const (
	titleStart        = "Start"
	titleStop         = "Stop"
	titleRestart      = "Restart"
	titleOpenLog      = "Open log"
	titleStartAll     = "Start all"
	titleStopAll      = "Stop all"
	titleOpenConfig   = "Open config"
	titleReload       = "Reload config"
	titleCopyError    = "Copy error"
	titleStartAtLogin = "Start at login"
	titleStartService = "Start service"
	titleQuit         = "Quit tray"
)

// build makes the menu for in. Its shape (which items exist, in which
// order) is the same whether the service runs or not, and whatever the
// agents' states: what does not apply is hidden. Only more agents than
// in.Slots change it. Tray hosts fetch a menu piecemeal, and some
// (libdbusmenu) lose the items of a submenu that appears after their
// first fetch; a menu whose shape never changes has no such submenu.
// waitingItem says, while no service runs, which agents outlived it and
// wait to be adopted (state adoptable), and until when.
func waitingItem(in input) item {
	if in.Conn == connected || len(in.Waiting) == 0 {
		return item{Hidden: true}
	}
	var lines []string
	for _, w := range in.Waiting {
		lines = append(lines, fmt.Sprintf("%s (pid %d): %s until %s", w.Identity, w.AgentPID, api.StateAdoptable, w.Until.Local().Format("15:04:05")))
	}
	title := human.Count(len(in.Waiting), "agent waits", "agents wait") + " for the service"
	return item{Title: title, Tooltip: "They outlived the service (survive_service_crash) and keep running until a service of this profile adopts them, or the time shown:\n" + strings.Join(lines, "\n")}
}

func build(in input) menu {
	st := in.Status
	up := in.Conn == connected
	if !up {
		st = api.Status{}
	}
	var m menu
	var head item
	switch in.Conn {
	case connected:
		agg := aggregate(st.Agents)
		head = item{Title: agg, Tooltip: fmt.Sprintf("profile %s, service pid %d", nonEmpty(st.Profile, in.Profile), st.ServicePID)}
		m.Icon, m.Tooltip = iconFor(st), "tether: "+agg
		if in.Profile != "" && in.Profile != "default" {
			m.Tooltip = fmt.Sprintf("tether (%s): %s", in.Profile, agg)
		}
	case connecting:
		head = item{Title: "connecting to the service…"}
	case notRunning:
		head = item{Title: "service not running", Tooltip: nonEmpty(in.ConnErr, "No tether service is running for this profile.")}
	default:
		head = item{Title: "service unreachable", Tooltip: in.ConnErr}
	}
	if !up {
		m.Icon, m.Tooltip = assets.Unreachable, "tether: "+head.Title
	}
	m.Items = append(m.Items, head,
		statusError("config not applied", st.ConfigError,
			"The config file has an error, so the service keeps running the config it had. Fix the file, then use Reload config (or run `tether reload`)."),
		statusError("state file unreadable", st.StateError,
			"The service could not read its state file and left it as it was; agents' intent is not remembered until it is fixed."),
		copyStatusErrors(st),
		waitingItem(in),
		item{Separator: true},
	)

	start := item{Title: titleStartService, Tooltip: "Start the login service if it is installed, else run `tether service run` in the background.",
		Enabled: in.Conn == notRunning && !in.StartingService, Hidden: up, Action: action{Kind: actStartService}}
	if in.StartingService {
		start.Title = "Starting service…"
	}
	m.Items = append(m.Items, start,
		item{Title: "no agents configured", Tooltip: "Add agents to the config (Open config), then run `tether reload`.",
			Hidden: !up || len(st.Agents) > 0})

	var startable, stoppable []string
	for _, a := range st.Agents {
		if canStart(a) {
			startable = append(startable, a.ID)
		}
		if canStop(a) {
			stoppable = append(stoppable, a.ID)
		}
	}
	agents := menuOrder(st.Agents)
	for i := range max(in.Slots, len(agents)) {
		if i >= len(agents) {
			m.Items = append(m.Items, agentSlot(api.Agent{}, in, true))
			continue
		}
		m.Items = append(m.Items, agentSlot(agents[i], in, false))
	}
	m.Items = append(m.Items,
		item{Separator: true},
		item{Title: titleStartAll, Tooltip: "Start every stopped or failed agent.", Hidden: !up,
			Enabled: len(startable) > 0, Action: action{Kind: actStart, IDs: startable}},
		item{Title: titleStopAll, Tooltip: "Stop every agent; they stay stopped until started again.", Hidden: !up,
			Enabled: len(stoppable) > 0, Action: action{Kind: actStop, IDs: stoppable}},
	)
	return appendCommon(m, in)
}

// statusError is the line of an error of the status as a whole, hidden
// when there is none.
func statusError(label string, e *api.Error, help string) item {
	if e == nil {
		return item{Hidden: true}
	}
	tip := e.Message + "\n" + help
	return item{Title: elide(label+": "+errorText(*e), maxErrorTitle), Tooltip: tip}
}

// copyStatusErrors copies the errors of the status as a whole, hidden
// when there is none.
func copyStatusErrors(st api.Status) item {
	var texts []string
	if e := st.ConfigError; e != nil {
		texts = append(texts, "config not applied: "+e.Message)
	}
	if e := st.StateError; e != nil {
		texts = append(texts, "state file unreadable: "+e.Message)
	}
	return item{Title: titleCopyError, Tooltip: "Copy the whole error to the clipboard.", Enabled: true, Hidden: len(texts) == 0,
		Action: action{Kind: actCopy, Text: strings.Join(texts, "\n")}}
}

// menuOrder puts the agents that failed first, the rest after them, each
// in the config's order.
func menuOrder(agents []api.Agent) []api.Agent {
	out := make([]api.Agent, 0, len(agents))
	for _, failed := range []bool{true, false} {
		for _, a := range agents {
			if isFailure(a.State) == failed {
				out = append(out, a)
			}
		}
	}
	return out
}

// isFailure: the state is a failure the user must act on.
func isFailure(state api.State) bool {
	return state == api.StateFailed || state == api.StateCleanupFailed
}

// appendCommon adds what every menu ends with.
func appendCommon(m menu, in input) menu {
	login := item{Title: titleStartAtLogin, Checkable: true, Checked: in.Login.On,
		Enabled: in.Login.Known && !in.Login.Busy, Action: action{Kind: actToggleLogin}}
	if in.Login.On {
		login.Tooltip = "Start nothing at the next login: the login service is disabled and the tray's autostart entry removed; what runs now keeps running."
	} else {
		login.Tooltip = "Install the login service and start the tray with the desktop session."
	}
	m.Items = append(m.Items,
		item{Title: titleOpenConfig, Tooltip: "Open the agents' config file in its editor.", Enabled: true, Action: action{Kind: actOpenConfig}},
		item{Title: titleReload, Tooltip: "Make the service apply the config file again; a config with an error is not applied, and the menu says why.",
			Enabled: in.Conn == connected, Action: action{Kind: actReload}},
		login,
		item{Separator: true},
		item{Title: titleQuit, Tooltip: "Close the tray only: the agents keep running under the service.", Enabled: true, Action: action{Kind: actQuit}},
	)
	return m
}

// agentSlot is the submenu of one agent; a hidden one keeps a place for
// an agent to come.
func agentSlot(a api.Agent, in input, hidden bool) item {
	if hidden {
		return item{Hidden: true, Children: []item{
			{Title: titleStart}, {Title: titleStop}, {Title: titleRestart}, {Title: titleOpenLog}, {Title: titleCopyError},
			{Separator: true}, {}, {Hidden: true}, {},
		}}
	}
	title := a.ID + ": " + stateWord(a.State)
	if !a.Since.IsZero() {
		if in.AgeAsClock {
			title += " since " + since(a.Since, in.Now)
		} else {
			title += " " + age(in.Now.Sub(a.Since))
		}
	}
	ids := []string{a.ID}
	last := item{Title: "no errors"}
	var copied string
	r, seen := in.LastErrors[a.ID]
	switch {
	case a.Error != nil && seen && r.Err.Equal(*a.Error):
		last, copied = errorLine("error at "+clock(r.At), r.Err), copyText(a, r.Err, r.At)
	case a.Error != nil && !a.Error.Time.IsZero():
		last, copied = errorLine("error at "+clock(a.Error.Time), *a.Error), copyText(a, *a.Error, a.Error.Time)
	case a.Error != nil:
		last, copied = errorLine("error", *a.Error), copyText(a, *a.Error, time.Time{})
	case seen:
		// The agent recovered; its last error stays until a newer one.
		last, copied = errorLine("last error at "+clock(r.At), r.Err), copyText(a, r.Err, r.At)
	}
	return item{
		Title:   title,
		Tooltip: stateHelp(a),
		Enabled: true,
		Children: []item{
			{Title: titleStart, Enabled: canStart(a), Action: action{Kind: actStart, IDs: ids}},
			{Title: titleStop, Enabled: canStop(a), Action: action{Kind: actStop, IDs: ids}},
			{Title: titleRestart, Enabled: canRestart(a), Action: action{Kind: actRestart, IDs: ids}},
			{Title: titleOpenLog, Enabled: true, Action: action{Kind: actOpenLog, IDs: ids}},
			{Title: titleCopyError, Tooltip: "Copy the whole error to the clipboard.", Enabled: copied != "", Action: action{Kind: actCopy, Text: copied}},
			{Separator: true},
			{Title: infoLine(a, in.Cost)},
			statusLine(a),
			last,
		},
	}
}

// statusLine is what a starting agent waits for and the agent's own word
// on how it is doing (its STATUS=), hidden when there is neither.
func statusLine(a api.Agent) item {
	note := rowtext.Note(a, time.Time{})
	if note == "" {
		return item{Hidden: true}
	}
	return item{Title: elide("status: "+note, maxErrorTitle), Tooltip: note}
}

// infoLine names the agent's identity, its processes, what its tree
// costs (CPU time and memory, when the service said, for a running
// agent) and its restarts. While a cleanup fails, the processes are the
// ones left alive, not the agent's own, which may be long gone.
func infoLine(a api.Agent, cost map[string]api.Usage) string {
	info := "identity " + a.Identity
	switch ps := survivors(derefError(a.Error)); {
	case a.State == api.StateCleanupFailed && len(ps) > 0:
		info += fmt.Sprintf(", still alive: %s %s", pidWord(len(ps)), pidList(ps))
	case a.State == api.StateCleanupFailed:
	case a.PID != 0:
		info += fmt.Sprintf(", pid %d", a.PID)
	}
	if u, ok := cost[a.ID]; ok && a.PID != 0 {
		info += fmt.Sprintf(", %s CPU, %s", u.CPUText(), u.MemoryText())
	}
	if a.Restarts > 0 {
		info += ", " + human.Count(a.Restarts, "restart", "restarts")
	}
	return info
}

func derefError(e *api.Error) api.Error {
	if e == nil {
		return api.Error{}
	}
	return *e
}

// copyText is what Copy error puts on the clipboard: the whole error,
// with whom and when.
func copyText(a api.Agent, e api.Error, at time.Time) string {
	when := ""
	if !at.IsZero() {
		when = " at " + at.Local().Format("2006-01-02 15:04:05")
	}
	return fmt.Sprintf("%s (%s): %s%s: %s", a.ID, a.Identity, e.Code, when, e.Message)
}

// plural is "1 restart", "2 restarts".

// shape is the structure of items, without their titles and flags: what
// the binding must find unchanged to apply a menu in place.
func shape(items []item) string {
	var sb strings.Builder
	for _, it := range items {
		switch {
		case it.Separator:
			sb.WriteByte('-')
		case it.Checkable:
			sb.WriteByte('x')
		default:
			sb.WriteByte('i')
		}
		if len(it.Children) > 0 {
			sb.WriteString("(" + shape(it.Children) + ")")
		}
	}
	return sb.String()
}

// errorLine is a disabled line showing an error, cause first; the
// tooltip holds it whole.
func errorLine(label string, e api.Error) item {
	return item{Title: errorTitle(label, e), Tooltip: string(e.Code) + ": " + e.Message}
}

// canStart: the agent is not running and nothing else will start it.
func canStart(a api.Agent) bool {
	return a.State == api.StateStopped || a.State == api.StateFailed
}

// canStop: there is something to stop, or an intent to withdraw.
func canStop(a api.Agent) bool {
	switch a.State {
	case api.StateRunning, api.StateStarting, api.StateBackoff, api.StateCleanupFailed, api.StateHeldElsewhere, api.StateOffline:
		return true
	case api.StateFailed:
		return a.Enabled
	}
	return false
}

// canRestart: a restart makes sense for a running agent and one that is
// waiting or parked after a failure; not while a stop or start is under
// way, and not while a tree may still live.
func canRestart(a api.Agent) bool {
	switch a.State {
	case api.StateRunning, api.StateBackoff, api.StateFailed, api.StateOffline:
		return true
	}
	return false
}

// stateOrder is the order of the aggregate line.
var stateOrder = []api.State{api.StateRunning, api.StateStarting, api.StateStopping, api.StateBackoff,
	api.StateHeldElsewhere, api.StateStopped, api.StateFailed, api.StateCleanupFailed, api.StateOffline}

// aggregate is the first line of the menu: "3 running, 1 failed".
func aggregate(agents []api.Agent) string {
	if len(agents) == 0 {
		return "no agents"
	}
	n := map[api.State]int{}
	for _, a := range agents {
		n[a.State]++
	}
	var parts []string
	for _, s := range stateOrder {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], stateWord(s)))
			delete(n, s)
		}
	}
	for s, k := range n { // a state this tray does not know yet
		parts = append(parts, fmt.Sprintf("%d %s", k, s))
	}
	return strings.Join(parts, ", ")
}

// iconFor picks the tray icon of a connected service's status: Failed
// when something failed (an agent, its cleanup, the config or state file),
// Busy when something is on its way (starting, stopping, waiting to be
// restarted), Running when some agent runs and the others rest where the
// user or their policy left them (stopped), and the plain mark when
// nothing runs: no agent, or all stopped, is not "all good".
func iconFor(st api.Status) assets.State {
	if st.ConfigError != nil || st.StateError != nil {
		return assets.Failed
	}
	icon, running := assets.Running, false
	for _, a := range st.Agents {
		switch {
		case isFailure(a.State):
			return assets.Failed
		case a.State == api.StateRunning:
			running = true
		case a.State == api.StateStopped:
		default: // starting, stopping, backoff, or a state this tray does not know
			icon = assets.Busy
		}
	}
	if icon == assets.Running && !running {
		return assets.Mark
	}
	return icon
}

func stateWord(s api.State) string {
	switch s {
	case api.StateBackoff:
		return "in backoff"
	case api.StateCleanupFailed:
		return "cleanup failed"
	case api.StateHeldElsewhere:
		return "held elsewhere"
	}
	return string(s)
}

func stateHelp(a api.Agent) string {
	switch a.State {
	case api.StateBackoff:
		return "It ended and will be started again after a pause."
	case api.StateFailed:
		return "It failed and will not be restarted until you start it."
	case api.StateCleanupFailed:
		return "Its processes could not be confirmed dead: its identity stays locked and tether keeps retrying."
	case api.StateHeldElsewhere:
		return "Its identity runs on another machine or profile; it starts here when that one lets go."
	case api.StateOffline:
		return "What it needs is unreachable: it starts once that is back."
	}
	return ""
}

// age formats a duration the way the menu shows it: its largest unit,
// rounded down ("<1m", "5m", "2h", "3d"). Nothing finer than a minute:
// a title that changed every second would make the tray host reload the
// menu while it is open.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "<1m"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

func clock(t time.Time) string { return t.Local().Format("15:04") }

// since is when t was, as seen at now: "14:02" today, "Mon 14:02" within
// the week, "2 Jan 14:02" before.
func since(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	switch {
	case t.YearDay() == now.YearDay() && t.Year() == now.Year():
		return t.Format("15:04")
	case now.Sub(t) < 6*24*time.Hour:
		return t.Format("Mon 15:04")
	}
	return t.Format("2 Jan 15:04")
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
