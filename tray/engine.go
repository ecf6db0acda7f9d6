package tray

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/wire"
)

// Options are what the command line hands the tray.
type Options struct {
	Profile    string // as given with --profile; "" is the default profile
	ConfigFlag string // as given with --config, or ""
	ConfigFile string // the config file of the profile
	LogDir     string // the agents' logs: LogDir/<id>.log
	ServiceLog string // where a service the tray starts writes its output
	StateDir   string // the profile's state directory, where the tray's lock is
	Socket     string // the service's socket
	// AtLogin: the tray was started by its login autostart entry; if it
	// finds no service, it starts one (where no service manager does).
	AtLogin bool
	Args    []string
	Stderr  io.Writer
}

// globalFlags are the flags that make a tether command act on the same
// profile and config as this tray.
func (o Options) globalFlags() []string {
	var args []string
	if o.Profile != "" {
		args = append(args, "--profile", o.Profile)
	}
	if o.ConfigFlag != "" {
		args = append(args, "--config", o.ConfigFlag)
	}
	return args
}

func (o Options) cmdHint() string {
	if f := o.globalFlags(); len(f) > 0 {
		return "tether " + strings.Join(f, " ")
	}
	return "tether"
}

// Retry delays of the event stream: from minRetry doubling to maxRetry,
// back to minRetry once connected.
const (
	minRetry = 200 * time.Millisecond
	maxRetry = 5 * time.Second
)

// Bounds of the tray's own calls.
const (
	actionTimeout       = 2 * time.Minute  // a stop waits for the agent's stop timeout
	serviceStartTimeout = 30 * time.Second // a started service must answer by then
)

// ui shows menus. render is called from one goroutine at a time; clicks on
// the items of m carry out their actions until ctx is done (the next
// render's ctx takes over).
type ui interface {
	render(ctx context.Context, m menu)
}

// deps are the engine's ways into the OS, replaced in tests.
type deps struct {
	now func() time.Time
	// notify shows a notice on the desktop.
	notify func(notice) error
	// open opens a file in the user's default application.
	open func(path string) error
	// startService starts the profile's service: the installed login
	// service, or a detached `tether service run`. exited, when not nil,
	// receives once if a process it started ends.
	startService func(Options) (how string, exited <-chan error, err error)
	// loginInstalled reports whether both the login service and the
	// tray's autostart entry are installed.
	loginInstalled func(Options) (bool, error)
	// setLogin turns start at login on (the login service where a
	// manager runs it, and the tray's autostart entry) or off (neither
	// starts at login any more; nothing running stops).
	setLogin func(o Options, on bool) error
	// withdraw takes down the bubble of a subject's last notice, if it is
	// still up (nil: bubbles stay until they expire or are dismissed).
	withdraw func(subject string) error
	// serviceInstalled reports whether the login service is installed
	// (nil: it is not).
	serviceInstalled func(Options) bool
	// restartWindow is how long a service manager takes to start the
	// service again after it died (zero when none does): the tray waits
	// that long before it says the service stopped.
	restartWindow func(Options) time.Duration
	// configInit writes the default config file.
	configInit func(Options) error
	// copy puts text on the clipboard; nil where there is none.
	copy func(text string) error
	// noticeActions, when not nil, is told what runs the action a user
	// picks on a notice (where the desktop offers them).
	noticeActions func(run func(action))
	// watchSleep, when not nil, reports until ctx is done that the
	// machine suspends (true) and resumes (false).
	watchSleep func(ctx context.Context, events chan<- bool)
}

// engine is the tray's runtime: it keeps what the tray knows, watches the
// service, rebuilds the menu and carries out its actions. It never touches
// systray itself (see ui).
type engine struct {
	opts   Options
	client *client.Client
	deps   deps
	ui     ui
	ctx    context.Context
	cancel context.CancelFunc
	// ageAsClock: the binding cannot tell when the menu opens (see
	// input.AgeAsClock).
	ageAsClock bool
	// settle is how long notices stay held after a resume.
	settle time.Duration

	mu  sync.Mutex
	in  input
	det detector
	svc serviceConfig // the config the service last said it runs; see actions.go
	// lostTimer announces the service's loss once its manager's
	// restart window has passed (see announceLost).
	lostTimer *time.Timer
	// autoStarted: an AtLogin tray has started the service once.
	autoStarted bool
	// lost is set while the service is gone after having been there:
	// the next hello announces it back.
	lost bool
	// lostPIDs are the pids of the agents that ran when the service was
	// last seen, to tell which ones its return restarted.
	lostPIDs map[string]int
	// build and version are the binary the service last said it runs
	// (api.Service): a hello from another one, or of another version,
	// says it was updated (two reproducible builds of one commit, such
	// as a release candidate and its release, share their Build).
	build, version string

	dirty chan struct{} // buffer 1: the menu must be rebuilt
	poke  chan struct{} // buffer 1: try to connect now
	// costWanted (buffer 1) asks costLoop for what each agent costs,
	// when the menu opens.
	costWanted chan struct{}

	// notices waiting for the notifier: never dropped, however many.
	noticeMu sync.Mutex
	queued   []notice
	noticed  chan struct{} // buffer 1: queued has notices
	sleeps   chan bool     // the machine suspends (true) or resumes

	wg sync.WaitGroup
}

func newEngine(parent context.Context, o Options, d deps, u ui) *engine {
	ctx, cancel := context.WithCancel(parent)
	return &engine{
		opts:       o,
		client:     client.New(o.Socket),
		deps:       d,
		ui:         u,
		ctx:        ctx,
		cancel:     cancel,
		in:         input{Profile: o.Profile, Conn: connecting, LastErrors: map[string]recorded{}},
		dirty:      make(chan struct{}, 1),
		poke:       make(chan struct{}, 1),
		costWanted: make(chan struct{}, 1),
		noticed:    make(chan struct{}, 1),
		sleeps:     make(chan bool),
		settle:     settleAfterResume,
	}
}

// minSlots is the least room the menu keeps for agents; see build.
const minSlots = 8

// growSlots makes room in the menu for n agents: what it has if that is
// enough, else twice as much (and 4 to spare), so that the shape seldom
// changes.
func growSlots(have, n int) int {
	if n <= have {
		return have
	}
	return max(2*have, n+4)
}

// start shows the first menu, then starts watching. The first render is
// synchronous so that a tray host asking for the menu at once gets one,
// and the whole of it: before it, a quick look at the status sizes the
// menu for the agents there are.
func (e *engine) start() {
	slots := minSlots
	ctx, cancelStatus := context.WithTimeout(e.ctx, time.Second)
	if st, err := e.client.Status(ctx); err == nil {
		slots = growSlots(slots, len(st.Agents))
	}
	cancelStatus()
	e.mu.Lock()
	e.in.Slots = slots
	e.mu.Unlock()
	mctx, cancel := context.WithCancel(e.ctx)
	e.ui.render(mctx, build(e.input()))
	if e.deps.noticeActions != nil {
		e.deps.noticeActions(e.act)
	}
	e.wg.Go(func() { e.renderLoop(cancel) })
	e.wg.Go(e.costLoop)
	e.wg.Go(e.watch)
	e.wg.Go(e.notifyLoop)
	e.wg.Go(e.readLogin)
	if e.deps.watchSleep != nil {
		e.wg.Go(func() { e.deps.watchSleep(e.ctx, e.sleeps) })
	}
}

// stop ends the engine and waits, up to within, for its goroutines. It
// reports whether they all ended.
func (e *engine) stop(within time.Duration) bool {
	e.cancel()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// changed asks for a rebuild. A burst of changes makes one rebuild: the
// send never blocks, and a pending request covers every later change.
// The binding also calls it when the menu opens, so that the ages in its
// titles are those of the moment: nothing rebuilds the menu on a timer.
func (e *engine) changed() {
	select {
	case e.dirty <- struct{}{}:
	default:
	}
}

// opened is called when the menu opens: the menu is rebuilt at once, so
// that its ages are those of the moment, and again once the service has
// said what each agent costs now (see costLoop).
func (e *engine) opened() {
	e.changed()
	select {
	case e.costWanted <- struct{}{}:
	default:
	}
}

// costMinGap is the least time between two questions of what the agents
// cost: a host that opens the menu and its submenus one after the other
// asks once.
const costMinGap = time.Second

// costLoop asks the service what each agent costs (a status with usage,
// which the service measures for the question) each time the menu opens,
// at most once per costMinGap, and rebuilds the menu with the answer. It
// has no timer: nothing is measured while the menu stays shut.
func (e *engine) costLoop() {
	var asked time.Time
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.costWanted:
		}
		now := e.deps.now()
		if now.Sub(asked) < costMinGap {
			continue
		}
		asked = now
		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		st, err := e.client.StatusWithUsage(ctx)
		cancel()
		if err != nil {
			continue
		}
		cost := make(map[string]api.Usage, len(st.Agents))
		for _, a := range st.Agents {
			if a.Usage != nil && a.Usage.Source != "" {
				cost[a.ID] = *a.Usage
			}
		}
		e.mu.Lock()
		e.in.Cost = cost
		e.mu.Unlock()
		e.changed()
	}
}

// reconnect asks the watcher to try now instead of waiting out its delay.
func (e *engine) reconnect() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

// post queues a notice for the notifier, which coalesces bursts. The
// queue has no bound: a notice is never dropped.
func (e *engine) post(n notice) {
	e.noticeMu.Lock()
	e.queued = append(e.queued, n)
	e.noticeMu.Unlock()
	select {
	case e.noticed <- struct{}{}:
	default:
	}
}

// takeNotices empties the queue.
func (e *engine) takeNotices() []notice {
	e.noticeMu.Lock()
	defer e.noticeMu.Unlock()
	out := e.queued
	e.queued = nil
	return out
}

// input is a copy of what the tray knows, for build.
func (e *engine) input() input {
	e.mu.Lock()
	defer e.mu.Unlock()
	in := e.in
	in.Status.Agents = slices.Clone(e.in.Status.Agents)
	in.LastErrors = maps.Clone(e.in.LastErrors)
	in.Cost = maps.Clone(e.in.Cost)
	in.Now = e.deps.now()
	in.AgeAsClock = e.ageAsClock
	return in
}

// renderLoop rebuilds the whole menu, under a fresh context, whenever
// something changed or the menu opens (see changed). The previous menu's
// context is cancelled only once the new one is in place, so a click is
// never lost in between. It has no timer: an idle tray does not wake.
func (e *engine) renderLoop(cancelPrev context.CancelFunc) {
	defer func() { cancelPrev() }()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.dirty:
		}
		mctx, cancel := context.WithCancel(e.ctx)
		e.ui.render(mctx, build(e.input()))
		cancelPrev()
		cancelPrev = cancel
	}
}

// watch follows the service's event stream for the tray's life. When the
// stream ends it reconnects: at once after a working connection (the
// service may only have dropped a slow reader), then with backoff, showing
// the service as not running meanwhile.
func (e *engine) watch() {
	delay := minRetry
	for {
		up, err := e.stream()
		if e.ctx.Err() != nil {
			return
		}
		if up {
			delay = minRetry
		} else {
			e.down(err)
		}
		t := time.NewTimer(delay)
		select {
		case <-e.ctx.Done():
			t.Stop()
			return
		case <-e.poke:
		case <-t.C:
		}
		t.Stop()
		if !up {
			delay = min(2*delay, maxRetry)
		}
	}
}

// stream reads one event stream to its end. up reports that it got as far
// as the hello.
func (e *engine) stream() (up bool, err error) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	seq, err := e.client.Events(ctx)
	if err != nil {
		return false, err
	}
	for ev, err := range seq {
		if err != nil {
			return up, err
		}
		switch {
		case ev.Type == api.EventHello && ev.Status != nil:
			e.hello(*ev.Status)
			up = true
		case ev.Type == api.EventAgent && ev.Agent != nil && up:
			e.agent(*ev.Agent)
		case ev.Type == api.EventStatus && ev.Status != nil && up:
			e.hello(*ev.Status)
		}
	}
	return up, client.ErrStreamClosed
}

// hello takes a whole status: at connection and after the service
// reloaded its config (the status event, which also carries a rejected
// config's error and drops the agents a reload removed).
func (e *engine) hello(st api.Status) {
	var notes []notice
	e.mu.Lock()
	if e.lostTimer != nil {
		// Back within its manager's restart window: no alarm, but one
		// quiet word of what the restart did to the agents.
		e.lostTimer.Stop()
		e.lostTimer = nil
		notes = append(notes, restartedNotice(e.opts.Profile, restartedAgents(e.lostPIDs, st.Agents)))
	}
	e.lostPIDs = nil
	if e.lost {
		e.lost = false
		notes = append(notes, backNotice(e.opts.Profile, st))
	}
	e.in.Conn, e.in.ConnErr, e.in.StartingService, e.in.Waiting = connected, "", false, nil
	if st.Service != nil {
		if e.version != "" && (st.Service.Build != e.build || st.Service.Version != e.version) {
			notes = append(notes, updatedNotice(e.opts.Profile, e.version, *st.Service))
		}
		e.build, e.version = st.Service.Build, st.Service.Version
	}
	e.in.Status = st
	e.noteServiceLocked(st)
	e.in.Slots = growSlots(e.in.Slots, len(st.Agents))
	e.det.keep(st.Agents)
	for id := range e.in.LastErrors {
		if !slices.ContainsFunc(st.Agents, func(a api.Agent) bool { return a.ID == id }) {
			delete(e.in.LastErrors, id)
		}
	}
	for _, a := range st.Agents {
		if n, ok := e.noteLocked(a); ok {
			notes = append(notes, n)
		}
	}
	e.mu.Unlock()
	for _, n := range notes {
		e.post(n)
	}
	e.changed()
}

// agent takes one agent's new row.
func (e *engine) agent(a api.Agent) {
	e.mu.Lock()
	agents := e.in.Status.Agents
	if i := slices.IndexFunc(agents, func(b api.Agent) bool { return b.ID == a.ID }); i >= 0 {
		agents[i] = a
	} else {
		// Added by a reload.
		e.in.Status.Agents = append(agents, a)
		e.in.Slots = growSlots(e.in.Slots, len(e.in.Status.Agents))
	}
	n, ok := e.noteLocked(a)
	e.mu.Unlock()
	if ok {
		e.post(n)
	}
	e.changed()
}

// noteLocked records a's error and returns the notice it calls for.
func (e *engine) noteLocked(a api.Agent) (notice, bool) {
	if a.Error != nil {
		if r, ok := e.in.LastErrors[a.ID]; !ok || !r.Err.Equal(*a.Error) {
			at := a.Since
			if at.IsZero() {
				at = e.deps.now()
			}
			e.in.LastErrors[a.ID] = recorded{Err: *a.Error, At: at}
		}
	}
	return e.det.agent(a)
}

// down records that the service cannot be reached, and announces a
// service that was there and is gone.
func (e *engine) down(err error) {
	conn := unreachable
	msg := err.Error()
	if errors.Is(err, client.ErrNotRunning) {
		conn = notRunning
		msg = fmt.Sprintf("No tether service is running for profile %q (%s).", e.profileName(), e.opts.Socket)
	}
	var waiting []wire.Waiting
	if conn == notRunning {
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		waiting, _ = client.WaitingToBeAdopted(ctx, e.opts.Socket, e.profileName())
		cancel()
	}
	e.mu.Lock()
	was := e.in.Conn
	if was == connected {
		e.lostPIDs = map[string]int{}
		for _, a := range e.in.Status.Agents {
			if a.PID > 0 {
				e.lostPIDs[a.ID] = a.PID
			}
		}
	}
	refresh := len(waiting) != len(e.in.Waiting)
	e.in.Conn, e.in.ConnErr, e.in.Waiting = conn, msg, waiting
	e.in.Status = api.Status{}
	e.lost = e.lost || was == connected
	autoStart := e.opts.AtLogin && !e.autoStarted && conn == notRunning
	e.autoStarted = e.autoStarted || autoStart
	e.mu.Unlock()
	if was == connected {
		e.announceLost()
	}
	if was != conn || refresh {
		e.changed()
	}
	if autoStart {
		e.logf("started at login and no service runs: starting it")
		e.wg.Go(e.startService)
	}
}

// announceLost says the service stopped: at once, or, where a service
// manager restarts it, only if it is not back once the manager's restart
// window has passed (a "service is back" notice follows then when it
// comes back).
func (e *engine) announceLost() {
	var window time.Duration
	if e.deps.restartWindow != nil {
		window = e.deps.restartWindow(e.opts)
	}
	if window <= 0 {
		e.post(lostNotice(e.opts.Profile, e.serviceInstalled()))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lostTimer != nil {
		e.lostTimer.Stop()
	}
	e.lostTimer = time.AfterFunc(window, func() {
		e.mu.Lock()
		gone := e.in.Conn != connected && e.ctx.Err() == nil
		e.lostTimer = nil
		e.mu.Unlock()
		if gone {
			e.post(lostNotice(e.opts.Profile, e.serviceInstalled()))
		}
	})
}

// serviceInstalled reports whether the login service is installed, for
// the advice of a "service stopped" notice.
func (e *engine) serviceInstalled() bool {
	return e.deps.serviceInstalled != nil && e.deps.serviceInstalled(e.opts)
}

// summaryDelay is how long a summary of gathered notices waits for more
// of its burst before it is shown (or updated).
const summaryDelay = 300 * time.Millisecond

// notifyLoop shows the notices: through the sleep gate (held while the
// machine suspends and resumes), then the coalescer (a burst becomes a
// few bubbles and one summary). A "service is back" notice is shown only
// after a "service stopped" one was. Its timers run only while a summary
// waits or the machine settles after a resume.
func (e *engine) notifyLoop() {
	c := newCoalescer()
	var gate sleepGate
	lostShown, failed := false, false
	var flush, settle *time.Timer
	var flushC, settleC <-chan time.Time
	defer func() {
		for _, t := range []*time.Timer{flush, settle} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	show := func(n notice) {
		switch n.Key {
		case lostKey:
			lostShown = true
		case backNotice("", api.Status{}).Key:
			if !lostShown {
				return
			}
			lostShown = false
		}
		if err := e.deps.notify(n); err != nil && !failed {
			// Said once: without a notification daemon every
			// notice would fail the same way.
			failed = true
			e.logf("cannot show notifications: %v (%s)", err, n.Title)
		}
	}
	deliver := func(n notice) {
		if n.withdraw {
			// What the agent's last notice said has ended: its bubble
			// goes, and a summary waiting to be shown no longer names it.
			c.forget(n.Agent)
			if e.deps.withdraw != nil {
				if err := e.deps.withdraw(n.Subject); err != nil {
					e.logf("taking down the notice of %s: %v", n.Agent, err)
				}
			}
			return
		}
		if c.admit(n, e.deps.now()) {
			show(n)
			return
		}
		if flushC == nil {
			flush = time.NewTimer(summaryDelay)
			flushC = flush.C
		}
	}
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.noticed:
			for _, n := range e.takeNotices() {
				if gate.holding() && gated(n) {
					gate.hold(n)
					continue
				}
				deliver(n)
			}
		case <-flushC:
			flushC = nil
			if n, ok := c.summary(); ok {
				show(n)
			}
		case asleep := <-e.sleeps:
			if settle != nil {
				settle.Stop()
				settleC = nil
			}
			if asleep {
				gate.sleep()
				e.logf("the machine suspends: notices are held until %s after it resumes", human.Duration(e.settle))
			} else if gate.resume(); gate.holding() {
				e.logf("the machine resumed: notices are held for %s more", human.Duration(e.settle))
				settle = time.NewTimer(e.settle)
				settleC = settle.C
			}
		case <-settleC:
			settleC = nil
			var still []notice
			for _, n := range gate.release() {
				if e.stillTrue(n) {
					still = append(still, n)
				}
			}
			for _, n := range gate.afterResume(still) {
				deliver(n)
			}
		}
	}
}

// stillTrue reports whether what a held notice says still holds: the
// agent is still in the condition that raised it, the service is still
// gone, or back.
func (e *engine) stillTrue(n notice) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case n.Agent != "":
		return e.det.holds(n)
	case n.Key == lostKey:
		return e.in.Conn != connected
	case n.Key == backNotice("", api.Status{}).Key:
		return e.in.Conn == connected
	}
	return true
}

func (e *engine) readLogin() {
	on, err := e.deps.loginInstalled(e.opts)
	if err != nil {
		e.logf("reading the login registration: %v", err)
	}
	e.mu.Lock()
	e.in.Login = login{Known: true, On: on}
	e.mu.Unlock()
	e.changed()
}

func (e *engine) logf(format string, args ...any) {
	if e.opts.Stderr != nil {
		logline.Printf(e.opts.Stderr, "tray", format, args...)
	}
}

func (e *engine) profileName() string {
	if e.opts.Profile == "" {
		return "default"
	}
	return e.opts.Profile
}

// act carries out a menu action. It returns at once; the work runs in the
// background, bounded by the tray's life.
func (e *engine) act(a action) {
	if e.ctx.Err() != nil {
		return
	}
	switch a.Kind {
	case noAction:
		return
	case actQuit:
		e.cancel()
		return
	}
	e.wg.Go(func() { e.perform(a) })
}

func (e *engine) perform(a action) {
	switch a.Kind {
	case actStart, actStop, actRestart:
		e.agentAction(a)
	case actOpenLog:
		for _, id := range a.IDs {
			path := filepath.Join(e.opts.LogDir, id+".log")
			if _, err := os.Stat(path); err != nil {
				e.post(infoNotice(id+"/"+kindAction, fmt.Sprintf("tether: no log for %s yet", id),
					fmt.Sprintf("%v\nThe log is written from the agent's first start.", err)))
				continue
			}
			e.openOrSay(path)
		}
	case actOpenConfig:
		o := e.serviceOptions()
		path := o.ConfigFile
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			if err := e.deps.configInit(o); err != nil {
				e.post(problemNotice("config/"+kindAction, "tether: cannot create the config file",
					fmt.Sprintf("%v\nRun `%s config init` to write one.", err, o.cmdHint())))
				return
			}
		}
		e.openOrSay(path)
	case actToggleLogin:
		e.toggleLogin()
	case actStartService:
		e.startService()
	case actReload:
		e.reload()
	case actCopy:
		e.copyText(a.Text)
	}
}

// fileOf is the file an action opens, if it opens one that exists: for
// notices whose buttons the desktop carries out itself (Windows toasts).
func (e *engine) fileOf(a action) string {
	var path string
	switch {
	case a.Kind == actOpenLog && len(a.IDs) == 1:
		path = filepath.Join(e.opts.LogDir, a.IDs[0]+".log")
	case a.Kind == actOpenConfig:
		path = e.serviceOptions().ConfigFile
	default:
		return ""
	}
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

func (e *engine) openOrSay(path string) {
	if err := e.deps.open(path); err != nil {
		e.post(problemNotice("open/"+kindAction, "tether: cannot open "+filepath.Base(path),
			fmt.Sprintf("%v\nOpen %s by hand.", err, path)))
	}
}

// reload makes the service apply its config again. A config it rejects
// is also in the status event that follows (the menu's line); the notice
// says it where the user just clicked.
func (e *engine) reload() {
	ctx, cancel := context.WithTimeout(e.ctx, actionTimeout)
	defer cancel()
	done, err := e.client.Reload(ctx)
	switch ae, isAPI := errors.AsType[*api.Error](err); {
	case e.ctx.Err() != nil:
	case err == nil:
		e.post(infoNotice("reload/"+kindAction, "tether: config reloaded", done.Summary()))
	case isAPI && ae.Code == api.CodeConfig:
		e.post(configNotice(*ae))
	case errors.Is(err, client.ErrNotRunning):
		e.post(problemNotice("reload/"+kindAction, "tether: could not reload the config", "The service is not running: use Start service first."))
	default:
		e.post(problemNotice("reload/"+kindAction, "tether: could not reload the config", err.Error()))
	}
}

// copyText puts text on the clipboard, or says why it cannot.
func (e *engine) copyText(text string) {
	err := errNoClipboard
	if e.deps.copy != nil {
		err = e.deps.copy(text)
	}
	if err != nil {
		e.post(problemNotice("copy/"+kindAction, "tether: cannot copy the error", fmt.Sprintf("%v\nThe error was:\n%s", err, text)))
	}
}

// agentAction starts, stops or restarts agents through the API. Failures
// that the agents' rows report (a cleanup failure, a held identity) are
// announced from the rows; the others here.
func (e *engine) agentAction(a action) {
	if len(a.IDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, actionTimeout)
	defer cancel()
	var res api.Results
	var err error
	verb := map[actionKind]string{actStart: "start", actStop: "stop", actRestart: "restart"}[a.Kind]
	switch a.Kind {
	case actStart:
		res, err = e.client.Start(ctx, a.IDs...)
	case actStop:
		res, err = e.client.Stop(ctx, a.IDs...)
	default:
		res, err = e.client.Restart(ctx, a.IDs...)
	}
	if e.ctx.Err() != nil {
		return
	}
	who := strings.Join(a.IDs, ", ")
	if err != nil {
		body := err.Error()
		if errors.Is(err, client.ErrNotRunning) {
			body = "The service is not running: use Start service first."
		}
		e.post(problemNotice(who+"/"+kindAction, fmt.Sprintf("tether: could not %s %s", verb, who), body))
		return
	}
	for _, r := range res.Results {
		if r.Error == nil || r.Error.Code == api.CodeCleanupFailed || r.Error.Code == api.CodeContention {
			continue
		}
		// An agent's own failure is its row's too: announced once,
		// as the row announces it, by whichever of the two comes first,
		// and gathered with the rest of a burst.
		if n, known, ok := e.foldFailure(r); known {
			if ok {
				e.post(n)
			}
			continue
		}
		e.post(problemNotice(r.ID+"/"+kindAction, fmt.Sprintf("tether: could not %s %s", verb, r.ID),
			fmt.Sprintf("%s: %s\n`%s logs %s` may say more.", r.Error.Code, errorText(*r.Error), e.opts.cmdHint(), r.ID)))
	}
}

// requestCodes are the codes of a request's failure that are not the
// agent's: its row does not carry them.
var requestCodes = []api.Code{api.CodeNotFound, api.CodeBadRequest, api.CodeForbidden,
	api.CodeInternal, api.CodeUpgrade, api.CodeHandingOver, api.CodeState}

// foldFailure hands a request's failure of a known agent to the detector
// as the failed row it stands for, so that the row's own event, before or
// after, does not announce it again. known is false for a failure that is
// the request's and not the agent's (an unknown id, a service handing
// over): the caller announces those itself.
func (e *engine) foldFailure(r api.Result) (n notice, known, ok bool) {
	if slices.Contains(requestCodes, r.Error.Code) {
		return notice{}, false, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.ContainsFunc(e.in.Status.Agents, func(a api.Agent) bool { return a.ID == r.ID }) {
		return notice{}, false, false
	}
	row := api.Agent{ID: r.ID, State: api.StateFailed, Error: r.Error}
	if r.Agent != nil {
		row = *r.Agent
	}
	n, ok = e.det.agent(row)
	return n, true, ok
}

// toggleLogin installs or removes the login service and the tray's
// autostart entry, both or neither.
func (e *engine) toggleLogin() {
	e.mu.Lock()
	if e.in.Login.Busy {
		e.mu.Unlock()
		return
	}
	on := !e.in.Login.On
	e.in.Login.Busy = true
	e.mu.Unlock()
	e.changed()

	// The service that starts at login runs the config this one runs.
	o := e.serviceOptions()
	err := e.deps.setLogin(o, on)
	if err != nil {
		n := problemNotice("login/"+kindAction, "tether: could not turn off start at login", err.Error())
		if on {
			n.Title = "tether: cannot start at login"
			n.Body = fmt.Sprintf("%v\nStart at login stays off. You can run `%s service run` and `%s tray` from your desktop's startup settings instead.",
				err, o.cmdHint(), o.cmdHint())
		}
		e.post(n)
	} else if on {
		// Ticked: it runs now too, if it did not.
		e.wg.Go(e.startService)
	}
	installed, err := e.deps.loginInstalled(e.opts)
	if err != nil {
		e.logf("reading the login registration: %v", err)
	}
	e.mu.Lock()
	e.in.Login = login{Known: true, On: installed}
	e.mu.Unlock()
	e.changed()
}

// startService starts the service and watches that it answers.
func (e *engine) startService() {
	e.mu.Lock()
	if e.in.StartingService || e.in.Conn == connected {
		e.mu.Unlock()
		return
	}
	e.in.StartingService = true
	e.mu.Unlock()
	e.changed()

	o := e.serviceOptions()
	fail := func(err error) {
		e.mu.Lock()
		e.in.StartingService = false
		e.mu.Unlock()
		e.changed()
		e.post(problemNotice("service/"+kindAction, "tether: the service did not start",
			fmt.Sprintf("%v\nRun `%s service run` in a terminal to see why.", err, o.cmdHint())))
	}
	how, exited, err := e.deps.startService(o)
	if err != nil {
		fail(err)
		return
	}
	e.reconnect()
	deadline := time.NewTimer(serviceStartTimeout)
	defer deadline.Stop()
	for {
		var why error
		select {
		case <-e.ctx.Done():
			return
		case err := <-exited:
			exited = nil
			why = fmt.Errorf("%s ended at once (%v); its output is in %s", how, err, e.opts.ServiceLog)
		case <-deadline.C:
			why = fmt.Errorf("%s did not answer within %s", how, human.Duration(serviceStartTimeout))
		case <-time.After(minRetry):
			// Poll our own state, not the service: the watcher
			// connects.
		}
		e.mu.Lock()
		up, starting := e.in.Conn == connected, e.in.StartingService
		e.mu.Unlock()
		if up || !starting {
			return
		}
		if why != nil {
			fail(why)
			return
		}
		e.reconnect()
	}
}
