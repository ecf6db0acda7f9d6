package tray

import (
	"fmt"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/wire"
)

// Conn is how the tray stands with the service.
type Conn int

const (
	// Connecting: the first attempt has not answered yet.
	Connecting Conn = iota
	// Connected: the event stream is open and the status is current.
	Connected
	// NotRunning: no service listens on the profile's socket.
	NotRunning
	// Unreachable: a service may be there but cannot be talked to
	// (permission, a broken answer); ConnErr says why.
	Unreachable
)

// Recorded is an agent's last error and when the tray saw it.
type Recorded struct {
	Err api.Error
	At  time.Time
}

// Login is the state of the "Start at login" switch.
type Login struct {
	Known bool // the registrations have been read
	On    bool // both the login service and the tray autostart are installed
	Busy  bool // installing or removing
}

// Input is everything the menu is built from.
type Input struct {
	Profile string
	Conn    Conn
	ConnErr string     // why the service cannot be reached
	Status  api.Status // when Connected
	// LastErrors holds, per agent id, the newest error the tray has seen.
	// The service clears an agent's error once it runs again; the tray
	// keeps showing it until a newer one replaces it.
	LastErrors      map[string]Recorded
	Login           Login
	StartingService bool // a "Start service" is under way
	Now             time.Time
	// AgeAsClock shows when each agent's state began ("since 14:02")
	// instead of how long ago ("2h"): for a binding that cannot rebuild
	// the menu as it opens, where an age would go stale.
	AgeAsClock bool
	// Slots is how many agent submenus the menu has room for; more agents
	// than that get more. See Build.
	Slots int
	// Waiting are the agents that outlived their service (its crash, with
	// survive_service_crash) and wait to be adopted, while none runs.
	Waiting []wire.Waiting
	// Cost is what each running agent's tree cost when the menu last
	// opened, by agent id (see engine.costLoop).
	Cost map[string]api.Usage
}

// ActionKind is what a menu item does.
type ActionKind int

// Actions of the menu.
const (
	NoAction ActionKind = iota
	ActStart
	ActStop
	ActRestart
	ActOpenLog
	ActOpenConfig
	ActToggleLogin
	ActStartService
	ActReload
	ActCopy
	ActQuit
)

// Action is what clicking an item does: Kind, on the agents IDs (for
// start, stop, restart and open log), or with Text (for copy).
type Action struct {
	Kind ActionKind
	IDs  []string
	Text string
}

// Item is one entry of the menu. A separator has only Separator set.
type Item struct {
	Title     string
	Tooltip   string
	Separator bool
	Enabled   bool
	Checkable bool
	Checked   bool
	Hidden    bool
	Action    Action
	Children  []Item
}

// Menu is the whole tray: its icon, the icon's tooltip and the menu.
type Menu struct {
	Icon    assets.State
	Tooltip string
	Items   []Item
}

// Titles of the items the binding and the tests look for.
const (
	TitleStart        = "Start"
	TitleStop         = "Stop"
	TitleRestart      = "Restart"
	TitleOpenLog      = "Open log"
	TitleStartAll     = "Start all"
	TitleStopAll      = "Stop all"
	TitleOpenConfig   = "Open config"
	TitleReload       = "Reload config"
	TitleCopyError    = "Copy error"
	TitleStartAtLogin = "Start at login"
	TitleStartService = "Start service"
	TitleQuit         = "Quit tray"
)

// Build makes the menu for in. Its shape (which items exist, in which
// order) is the same whether the service runs or not, and whatever the
// agents' states: what does not apply is hidden. Only more agents than
// in.Slots change it. Tray hosts fetch a menu piecemeal, and some
// (libdbusmenu) lose the items of a submenu that appears after their
// first fetch; a menu whose shape never changes has no such submenu.
// waitingItem says, while no service runs, which agents outlived it and
// wait to be adopted (state adoptable), and until when.
func waitingItem(in Input) Item {
	if in.Conn == Connected || len(in.Waiting) == 0 {
		return Item{Hidden: true}
	}
	var lines []string
	for _, w := range in.Waiting {
		lines = append(lines, fmt.Sprintf("%s (pid %d): %s until %s", w.Identity, w.AgentPID, api.StateAdoptable, w.Until.Local().Format("15:04:05")))
	}
	title := fmt.Sprintf("%d agent(s) wait for the service", len(in.Waiting))
	return Item{Title: title, Tooltip: "They outlived the service (survive_service_crash) and keep running until a service of this profile adopts them, or the time shown:\n" + strings.Join(lines, "\n")}
}

func Build(in Input) Menu {
	st := in.Status
	connected := in.Conn == Connected
	if !connected {
		st = api.Status{}
	}
	var m Menu
	var head Item
	switch in.Conn {
	case Connected:
		agg := Aggregate(st.Agents)
		head = Item{Title: agg, Tooltip: fmt.Sprintf("profile %s, service pid %d", nonEmpty(st.Profile, in.Profile), st.ServicePID)}
		m.Icon, m.Tooltip = IconFor(st), "tether: "+agg
		if in.Profile != "" && in.Profile != "default" {
			m.Tooltip = fmt.Sprintf("tether (%s): %s", in.Profile, agg)
		}
	case Connecting:
		head = Item{Title: "connecting to the service…"}
	case NotRunning:
		head = Item{Title: "service not running", Tooltip: nonEmpty(in.ConnErr, "No tether service is running for this profile.")}
	default:
		head = Item{Title: "service unreachable", Tooltip: in.ConnErr}
	}
	if !connected {
		m.Icon, m.Tooltip = assets.Unreachable, "tether: "+head.Title
	}
	m.Items = append(m.Items, head,
		statusError("config not applied", st.ConfigError,
			"The config file has an error, so the service keeps running the config it had. Fix the file, then use Reload config (or run `tether reload`)."),
		statusError("state file unreadable", st.StateError,
			"The service could not read its state file and left it as it was; agents' intent is not remembered until it is fixed."),
		copyStatusErrors(st),
		waitingItem(in),
		Item{Separator: true},
	)

	start := Item{Title: TitleStartService, Tooltip: "Start the login service if it is installed, else run `tether service run` in the background.",
		Enabled: in.Conn == NotRunning && !in.StartingService, Hidden: connected, Action: Action{Kind: ActStartService}}
	if in.StartingService {
		start.Title = "Starting service…"
	}
	m.Items = append(m.Items, start,
		Item{Title: "no agents configured", Tooltip: "Add agents to the config (Open config), then run `tether reload`.",
			Hidden: !connected || len(st.Agents) > 0})

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
		Item{Separator: true},
		Item{Title: TitleStartAll, Tooltip: "Start every stopped or failed agent.", Hidden: !connected,
			Enabled: len(startable) > 0, Action: Action{Kind: ActStart, IDs: startable}},
		Item{Title: TitleStopAll, Tooltip: "Stop every agent; they stay stopped until started again.", Hidden: !connected,
			Enabled: len(stoppable) > 0, Action: Action{Kind: ActStop, IDs: stoppable}},
	)
	return appendCommon(m, in)
}

// statusError is the line of an error of the status as a whole, hidden
// when there is none.
func statusError(label string, e *api.Error, help string) Item {
	if e == nil {
		return Item{Hidden: true}
	}
	tip := e.Message + "\n" + help
	return Item{Title: elide(label+": "+errorText(*e), maxErrorTitle), Tooltip: tip}
}

// copyStatusErrors copies the errors of the status as a whole, hidden
// when there is none.
func copyStatusErrors(st api.Status) Item {
	var texts []string
	if e := st.ConfigError; e != nil {
		texts = append(texts, "config not applied: "+e.Message)
	}
	if e := st.StateError; e != nil {
		texts = append(texts, "state file unreadable: "+e.Message)
	}
	return Item{Title: TitleCopyError, Tooltip: "Copy the whole error to the clipboard.", Enabled: true, Hidden: len(texts) == 0,
		Action: Action{Kind: ActCopy, Text: strings.Join(texts, "\n")}}
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
func appendCommon(m Menu, in Input) Menu {
	login := Item{Title: TitleStartAtLogin, Checkable: true, Checked: in.Login.On,
		Enabled: in.Login.Known && !in.Login.Busy, Action: Action{Kind: ActToggleLogin}}
	if in.Login.On {
		login.Tooltip = "Remove the login service and the tray's autostart entry (this stops a service started by the login manager)."
	} else {
		login.Tooltip = "Install the login service and start the tray with the desktop session."
	}
	m.Items = append(m.Items,
		Item{Title: TitleOpenConfig, Tooltip: "Open the agents' config file in its editor.", Enabled: true, Action: Action{Kind: ActOpenConfig}},
		Item{Title: TitleReload, Tooltip: "Make the service apply the config file again; a config with an error is not applied, and the menu says why.",
			Enabled: in.Conn == Connected, Action: Action{Kind: ActReload}},
		login,
		Item{Separator: true},
		Item{Title: TitleQuit, Tooltip: "Close the tray only: the agents keep running under the service.", Enabled: true, Action: Action{Kind: ActQuit}},
	)
	return m
}

// agentSlot is the submenu of one agent; a hidden one keeps a place for
// an agent to come.
func agentSlot(a api.Agent, in Input, hidden bool) Item {
	if hidden {
		return Item{Hidden: true, Children: []Item{
			{Title: TitleStart}, {Title: TitleStop}, {Title: TitleRestart}, {Title: TitleOpenLog}, {Title: TitleCopyError},
			{Separator: true}, {}, {Hidden: true}, {},
		}}
	}
	title := a.ID + ": " + stateWord(a.State)
	if !a.Since.IsZero() {
		if in.AgeAsClock {
			title += " since " + since(a.Since, in.Now)
		} else {
			title += " " + Age(in.Now.Sub(a.Since))
		}
	}
	ids := []string{a.ID}
	last := Item{Title: "no errors"}
	var copied string
	r, seen := in.LastErrors[a.ID]
	switch {
	case a.Error != nil && seen && r.Err.Equal(*a.Error):
		last, copied = errorLine("error at "+clock(r.At), r.Err), copyText(a, r.Err, r.At)
	case a.Error != nil:
		last, copied = errorLine("error", *a.Error), copyText(a, *a.Error, time.Time{})
	case seen:
		// The agent recovered; its last error stays until a newer one.
		last, copied = errorLine("last error at "+clock(r.At), r.Err), copyText(a, r.Err, r.At)
	}
	return Item{
		Title:   title,
		Tooltip: stateHelp(a),
		Enabled: true,
		Children: []Item{
			{Title: TitleStart, Enabled: canStart(a), Action: Action{Kind: ActStart, IDs: ids}},
			{Title: TitleStop, Enabled: canStop(a), Action: Action{Kind: ActStop, IDs: ids}},
			{Title: TitleRestart, Enabled: canRestart(a), Action: Action{Kind: ActRestart, IDs: ids}},
			{Title: TitleOpenLog, Enabled: true, Action: Action{Kind: ActOpenLog, IDs: ids}},
			{Title: TitleCopyError, Tooltip: "Copy the whole error to the clipboard.", Enabled: copied != "", Action: Action{Kind: ActCopy, Text: copied}},
			{Separator: true},
			{Title: infoLine(a, in.Cost)},
			statusLine(a),
			last,
		},
	}
}

// statusLine is the agent's own word on how it is doing (its STATUS=, or
// what a starting agent waits for), hidden when there is none.
func statusLine(a api.Agent) Item {
	if a.Status == "" {
		return Item{Hidden: true}
	}
	return Item{Title: elide("status: "+a.Status, maxErrorTitle), Tooltip: a.Status}
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
		info += ", " + plural(a.Restarts, "restart", "restarts")
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
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Shape is the structure of items, without their titles and flags: what
// the binding must find unchanged to apply a menu in place.
func Shape(items []Item) string {
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
			sb.WriteString("(" + Shape(it.Children) + ")")
		}
	}
	return sb.String()
}

// errorLine is a disabled line showing an error, cause first; the
// tooltip holds it whole.
func errorLine(label string, e api.Error) Item {
	return Item{Title: errorTitle(label, e), Tooltip: string(e.Code) + ": " + e.Message}
}

// canStart: the agent is not running and nothing else will start it.
func canStart(a api.Agent) bool {
	return a.State == api.StateStopped || a.State == api.StateFailed
}

// canStop: there is something to stop, or an intent to withdraw.
func canStop(a api.Agent) bool {
	switch a.State {
	case api.StateRunning, api.StateStarting, api.StateBackoff, api.StateCleanupFailed:
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
	case api.StateRunning, api.StateBackoff, api.StateFailed:
		return true
	}
	return false
}

// stateOrder is the order of the aggregate line.
var stateOrder = []api.State{api.StateRunning, api.StateStarting, api.StateStopping, api.StateBackoff,
	api.StateStopped, api.StateFailed, api.StateCleanupFailed}

// Aggregate is the first line of the menu: "3 running, 1 failed".
func Aggregate(agents []api.Agent) string {
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

// IconFor picks the tray icon of a connected service's status: Failed
// when something failed (an agent, its cleanup, the config or state file),
// Busy when something is on its way (starting, stopping, waiting to be
// restarted), Running otherwise: every enabled agent runs, and the others
// rest where the user or their policy left them (stopped).
func IconFor(st api.Status) assets.State {
	if st.ConfigError != nil || st.StateError != nil {
		return assets.Failed
	}
	icon := assets.Running
	for _, a := range st.Agents {
		switch {
		case isFailure(a.State):
			return assets.Failed
		case a.State == api.StateRunning, a.State == api.StateStopped:
		default: // starting, stopping, backoff, or a state this tray does not know
			icon = assets.Busy
		}
	}
	return icon
}

func stateWord(s api.State) string {
	switch s {
	case api.StateBackoff:
		return "in backoff"
	case api.StateCleanupFailed:
		return "cleanup failed"
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
	}
	return ""
}

// Age formats a duration the way the menu shows it: its largest unit,
// rounded down ("<1m", "5m", "2h", "3d"). Nothing finer than a minute:
// a title that changed every second would make the tray host reload the
// menu while it is open.
func Age(d time.Duration) string {
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
