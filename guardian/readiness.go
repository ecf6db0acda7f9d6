package guardian

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/probe"
	"github.com/tether-dev/tether/sdnotify"
	"github.com/tether-dev/tether/wire"
)

// Readiness is how the agent is found ready (I8) and kept healthy, as the
// start request carries it. A nil Readiness is an agent that is ready once
// spawned.
type Readiness struct {
	// Ready is how the agent says, or is seen to be, ready; nil: at
	// spawn.
	Ready *probe.Spec `json:"ready,omitempty"`
	// StartTimeout bounds the wait for ready; past it the tree is
	// stopped (ReasonNotReady). EXTEND_TIMEOUT_USEC= moves it.
	StartTimeout wire.Duration `json:"start_timeout,omitempty"`
	// Watchdog, with a notify agent, is the longest time between two
	// WATCHDOG=1 pings once ready; a missed one stops the tree
	// (ReasonWatchdog). The agent sees it as WATCHDOG_USEC.
	Watchdog wire.Duration `json:"watchdog,omitempty"`
	// Health is checked every Health.Every once ready; Health.Failures
	// failures in a row stop the tree (ReasonUnhealthy).
	Health *HealthCheck `json:"health,omitempty"`
	// NotifyDir is the user-only directory the notify socket is made in:
	// a short path (unix socket paths are limited to about 100 bytes).
	NotifyDir string `json:"notify_dir,omitempty"`
}

// HealthCheck is a check repeated while the agent runs.
type HealthCheck struct {
	Check    probe.Spec    `json:"check"`
	Every    wire.Duration `json:"every"`
	Timeout  wire.Duration `json:"timeout"`
	Failures int           `json:"failures"`
}

// DefaultStartTimeout is used when a Readiness leaves StartTimeout zero.
const DefaultStartTimeout = 60 * time.Second

// readyPoll paces an outside readiness check while the agent starts: soon
// at first, since most agents are quick, then less often. The period is
// the check's only timer, and it ends with the start.
const (
	readyPollFirst = 10 * time.Millisecond
	readyPollMax   = 100 * time.Millisecond
)

func (r *Readiness) validate() error {
	if r == nil {
		return nil
	}
	if r.Ready != nil {
		if !kindSupported(r.Ready.Kind) {
			return fmt.Errorf("readiness: %s is not available on %s", r.Ready.Kind, runtime.GOOS)
		}
		if err := r.Ready.Validate(); err != nil {
			return fmt.Errorf("readiness: %w", err)
		}
		if r.Ready.Kind == probe.KindNotify && !filepath.IsAbs(r.NotifyDir) {
			return fmt.Errorf("readiness: notify_dir %q: must be an absolute path", r.NotifyDir)
		}
	}
	if r.StartTimeout < 0 {
		return fmt.Errorf("readiness: start_timeout %v: must not be negative", r.StartTimeout)
	}
	if r.Watchdog != 0 && (r.Ready == nil || r.Ready.Kind != probe.KindNotify) {
		return errors.New("readiness: a watchdog needs ready: notify")
	}
	if h := r.Health; h != nil {
		if !h.Check.Kind.Outside() || h.Check.Kind == probe.KindLog {
			return fmt.Errorf("readiness: health check %s: only http, tcp and exec are health checks", h.Check.Kind)
		}
		if err := h.Check.Validate(); err != nil {
			return fmt.Errorf("readiness: health: %w", err)
		}
		if h.Every <= 0 || h.Timeout <= 0 || h.Failures <= 0 {
			return errors.New("readiness: health: every, timeout and failures must be positive")
		}
	}
	return nil
}

// readyEventKind names what the readiness watchers saw.
type readyEventKind int

const (
	readyUp        readyEventKind = iota // the agent is ready
	readyStatus                          // STATUS= text
	readyPing                            // WATCHDOG=1
	readyTrigger                         // WATCHDOG=trigger
	readyExtend                          // EXTEND_TIMEOUT_USEC=
	readyMainPID                         // MAINPID=
	readyUnhealthy                       // the health check failed too often
	readyFDClosed                        // the notification descriptor closed before a newline
)

type readyEvent struct {
	kind   readyEventKind
	status string
	extend time.Duration
	pid    int
	err    error
}

// notifySource is the receiving end of $NOTIFY_SOCKET (platform's
// datagram socket on Unix).
type notifySource interface {
	// Receive reads one datagram and says who sent it; the caller
	// closes the sender.
	Receive(buf []byte) (n int, from notifySender, truncated bool, err error)
	Path() string
	Close() error
}

// notifySender is what the kernel says of a datagram's sender.
type notifySender interface {
	// PID is the sender's pid, 0 where the system does not say.
	PID() int
	// GoneOwn reports whether the sender has exited by now and was a
	// process of this user's.
	GoneOwn() bool
	Close()
}

// readiness is the guardian's watcher of one agent's readiness and
// health. Every watcher is a goroutine blocked in a read or paced by its
// own check's period; none runs when none is configured.
type readiness struct {
	spec    *Readiness
	notify  notifySource
	fdRead  *os.File // the read end of the notification descriptor
	fdWrite *os.File // its write end, passed to the agent
	// logPattern is the ready: {log} check's, matched against each line
	// of the agent's output as the guardian reads it (logLine) until one
	// matches (logSeen).
	logPattern *regexp.Regexp
	logSeen    atomic.Bool
	events     chan readyEvent
	ctx        context.Context
	cancel     context.CancelFunc
	logf       func(string, ...any)
	// The agent's working directory and environment, for checks; run
	// runs an exec check's command (nil: os/exec).
	dir string
	env []string
	run probe.Runner
	// wg counts the watchers, so close returns only once every check's
	// process is gone.
	wg sync.WaitGroup
}

// checkContext is what an outside check of this agent needs: its command
// is looked up in the agent's PATH and working directory, as the agent's
// own is.
func (r *readiness) checkContext() probe.Context {
	return probe.Context{
		Dir: r.dir, Env: r.env, Run: r.run,
		Lookup: func(argv0 string) (string, error) {
			p, fl := resolveCommand(argv0, r.dir, r.env)
			if fl != nil {
				return "", errors.New(fl.Message)
			}
			return p, nil
		},
	}
}

// watch runs f as a watcher that close waits for.
func (r *readiness) watch(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// prepare makes what the agent must inherit: the notify socket or the
// notification pipe. env receives the variables the agent needs to find
// them.
func (g *guardian) prepareReadiness(env map[string]string) *wire.Failure {
	spec := g.req.Readiness
	if spec == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &readiness{spec: spec, events: make(chan readyEvent, 16), ctx: ctx, cancel: cancel, logf: g.logf, run: g.checkRunner()}
	g.readiness = r
	if spec.Ready == nil {
		return nil
	}
	switch spec.Ready.Kind {
	case probe.KindNotify:
		path := filepath.Join(spec.NotifyDir, g.key[:min(len(g.key), 40)]+"-"+strconv.Itoa(os.Getpid())+".sock")
		n, err := listenNotify(path)
		if err != nil {
			return &wire.Failure{Code: wire.CodeSpawn, Path: path, Message: "making the notify socket: " + err.Error()}
		}
		r.notify = n
		env["NOTIFY_SOCKET"] = n.Path()
		if spec.Watchdog > 0 {
			env["WATCHDOG_USEC"] = strconv.FormatInt(spec.Watchdog.Duration().Microseconds(), 10)
		}
	case probe.KindFD:
		rd, wr, err := os.Pipe()
		if err != nil {
			return &wire.Failure{Code: wire.CodeInternal, Message: "making the notification descriptor: " + err.Error()}
		}
		r.fdRead, r.fdWrite = rd, wr
	case probe.KindLog:
		// Ready before the spawn: the agent's first line is matched.
		re, err := regexp.Compile(spec.Ready.Pattern)
		if err != nil {
			return &wire.Failure{Code: wire.CodeConfig, Message: "readiness: " + err.Error()}
		}
		r.logPattern = re
	}
	return nil
}

// begin starts watching, once the agent runs. member says whether a pid
// belongs to the agent's tree; env and dir are the agent's, for exec
// checks.
func (r *readiness) begin(member func(pid int) bool, dir string, env []string) error {
	r.dir, r.env = dir, env
	if r.fdWrite != nil {
		// The agent has its copy: EOF on the read end now means every
		// process that could write the newline has closed it.
		r.fdWrite.Close()
		r.fdWrite = nil
	}
	if r.notify != nil {
		r.watch(func() { r.readNotify(member) })
	}
	if r.spec.Ready == nil {
		return nil
	}
	switch k := r.spec.Ready.Kind; {
	case k == probe.KindFD:
		r.watch(r.readFD)
	case k == probe.KindLog:
		// The output's reader matches each line (logLine).
	case k.Outside():
		c, err := r.spec.Ready.Check(r.checkContext())
		if err != nil {
			return err
		}
		r.watch(func() { r.poll(c) })
	}
	return nil
}

// readNotify turns datagrams on the notify socket into events. A datagram
// whose sender is not a process of the agent's tree is dropped (I8: only
// the agent speaks for itself), and so is a MAINPID= outside it; drops
// are logged at most once a second (see notifyGate).
func (r *readiness) readNotify(member func(pid int) bool) {
	buf := make([]byte, sdnotify.MaxDatagram+1)
	gate := newNotifyGate(time.Now())
	for {
		n, from, trunc, err := r.notify.Receive(buf)
		if err != nil {
			if r.ctx.Err() == nil {
				r.logf("notify socket: %v", err)
			}
			return
		}
		now := time.Now()
		if trunc || n > sdnotify.MaxDatagram {
			from.Close()
			gate.drop(now, fmt.Sprintf("a datagram longer than %d bytes", sdnotify.MaxDatagram), r.logf)
			continue
		}
		ok, why := gate.accept(now, from, member)
		from.Close()
		if !ok {
			gate.drop(now, why, r.logf)
			continue
		}
		m, perr := sdnotify.Parse(buf[:n])
		if perr != nil {
			r.logf("notify: %v", perr)
		}
		if m.MainPID != 0 && !member(m.MainPID) {
			gate.drop(now, fmt.Sprintf("MAINPID=%d, which is not in the agent's tree", m.MainPID), r.logf)
			m.MainPID = 0
		}
		r.dispatch(m)
	}
}

// The tree walks a flood of outsiders' datagrams may cost, and the pace
// of the lines that say they were dropped.
const (
	notifyWalksPerSecond = 50
	notifyDropLogEvery   = time.Second
)

// notifyGate decides whose datagrams are taken, and keeps the cost of
// those that are not bounded: a process outside the tree that sends
// datagrams as fast as it can gets a tree walk for at most
// notifyWalksPerSecond of them a second (the rest are dropped unlooked
// at), and one log line a second that counts them.
type notifyGate struct {
	walks   float64 // walks left, refilled at notifyWalksPerSecond
	refill  time.Time
	dropped int // since the last line
	last    string
	logged  time.Time
}

func newNotifyGate(now time.Time) *notifyGate {
	return &notifyGate{walks: notifyWalksPerSecond, refill: now}
}

// accept says whether from speaks for the agent: a sender the system
// does not name (no credentials on this system's datagrams: the socket's
// user-only directory is the check), a member of the tree, or a sender
// that has exited and was the user's (a forked child or systemd-notify
// --no-block that sent and exited before its datagram was read: its
// place in the tree is gone with it, and only the user reaches the
// socket). A live sender is looked for in the tree, within the walks
// left; one that exits while it is looked for counts as gone.
func (g *notifyGate) accept(now time.Time, from notifySender, member func(pid int) bool) (bool, string) {
	pid := from.PID()
	if pid == 0 || from.GoneOwn() {
		return true, ""
	}
	g.walks = min(g.walks+now.Sub(g.refill).Seconds()*notifyWalksPerSecond, notifyWalksPerSecond)
	g.refill = now
	if g.walks < 1 {
		return false, fmt.Sprintf("a message from pid %d, not looked for in the agent's tree (too many messages from outside it)", pid)
	}
	g.walks--
	if member(pid) || from.GoneOwn() {
		return true, ""
	}
	return false, fmt.Sprintf("a message from pid %d, which is not in the agent's tree", pid)
}

// drop notes a dropped datagram, and logs what was dropped at most once
// every notifyDropLogEvery.
func (g *notifyGate) drop(now time.Time, what string, logf func(string, ...any)) {
	g.dropped++
	g.last = what
	if now.Sub(g.logged) < notifyDropLogEvery {
		return
	}
	if g.dropped == 1 {
		logf("notify: ignored %s", what)
	} else {
		logf("notify: ignored %d messages in %v; the last: %s", g.dropped, now.Sub(g.logged).Round(time.Millisecond), what)
	}
	g.dropped, g.logged = 0, now
}

func (r *readiness) dispatch(m sdnotify.Message) {
	if m.HasStatus {
		r.emit(readyEvent{kind: readyStatus, status: m.Status})
	}
	if m.MainPID != 0 {
		r.emit(readyEvent{kind: readyMainPID, pid: m.MainPID})
	}
	if m.ExtendTimeout > 0 {
		r.emit(readyEvent{kind: readyExtend, extend: m.ExtendTimeout})
	}
	if m.Ready {
		r.emit(readyEvent{kind: readyUp})
	}
	if m.Watchdog {
		r.emit(readyEvent{kind: readyPing})
	}
	if m.WatchdogTrigger {
		r.emit(readyEvent{kind: readyTrigger})
	}
	if m.Stopping {
		r.logf("notify: the agent says it is stopping")
	}
	if m.Reloading {
		r.logf("notify: the agent says it is reloading")
	}
	if m.HasErrno {
		r.logf("notify: the agent reports errno %d", m.Errno)
	}
}

func (r *readiness) emit(ev readyEvent) {
	select {
	case r.events <- ev:
	case <-r.ctx.Done():
	}
}

// readFD waits for the s6-style newline on the notification descriptor.
func (r *readiness) readFD() {
	br := bufio.NewReader(r.fdRead)
	for {
		b, err := br.ReadByte()
		if err != nil {
			if r.ctx.Err() == nil {
				r.emit(readyEvent{kind: readyFDClosed})
			}
			return
		}
		if b == '\n' {
			r.emit(readyEvent{kind: readyUp})
			return
		}
	}
}

// poll repeats an outside check until it passes or the start ends.
func (r *readiness) poll(c probe.Check) {
	period := readyPollFirst
	for r.ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(r.ctx, max(period, time.Second))
		err := c.Probe(pctx)
		cancel()
		if err == nil {
			r.emit(readyEvent{kind: readyUp})
			return
		}
		t := time.NewTimer(period)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		period = min(period*3/2, readyPollMax)
	}
}

// logLine returns what the output's reader calls with each line of the
// agent's output: nil without a log readiness check. The first line that
// matches makes the agent ready; after it, lines are no longer matched.
func (r *readiness) logLine() func(line []byte) {
	if r == nil || r.logPattern == nil {
		return nil
	}
	return func(line []byte) {
		if r.logSeen.Load() || !r.logPattern.Match(line) {
			return
		}
		if r.logSeen.CompareAndSwap(false, true) {
			r.emit(readyEvent{kind: readyUp})
		}
	}
}

// monitor starts the health check, once the agent is ready.
func (r *readiness) monitor() error {
	h := r.spec.Health
	if h == nil {
		return nil
	}
	c, err := h.Check.Check(r.checkContext())
	if err != nil {
		return err
	}
	m := &probe.Monitor{Check: c, Every: h.Every.Duration(), Timeout: h.Timeout.Duration(), Failures: h.Failures,
		Unhealthy: func(last error) { r.emit(readyEvent{kind: readyUnhealthy, err: last}) }}
	r.watch(func() { m.Run(r.ctx) })
	return nil
}

// close stops every watcher and removes the notify socket.
func (r *readiness) close() {
	if r == nil {
		return
	}
	r.cancel()
	if r.notify != nil {
		_ = r.notify.Close()
	}
	if r.fdRead != nil {
		r.fdRead.Close()
	}
	if r.fdWrite != nil {
		r.fdWrite.Close()
	}
	r.wg.Wait()
}

// readyWatch is the watch loop's side of readiness: the start deadline
// until the agent is ready, then the watchdog. Its channels are nil when
// there is nothing to wait for, so an agent without checks adds no timer.
type readyWatch struct {
	g       *guardian
	events  <-chan readyEvent
	startT  *time.Timer
	startC  <-chan time.Time
	dogT    *time.Timer
	dogC    <-chan time.Time
	dog     time.Duration
	up      bool
	status  string // the last STATUS= text
	mainPID int    // the last MAINPID=
	began   time.Time
	limit   time.Duration
}

func (g *guardian) readyWatch() *readyWatch {
	rw := &readyWatch{g: g, up: true}
	r := g.readiness
	if r == nil {
		return rw
	}
	rw.events = r.events
	rw.dog = r.spec.Watchdog.Duration()
	if r.spec.Ready == nil {
		rw.becameReady()
		return rw
	}
	rw.up = false
	rw.began = time.Now()
	rw.limit = r.spec.StartTimeout.Duration()
	if rw.limit <= 0 {
		rw.limit = DefaultStartTimeout
	}
	rw.startT = time.NewTimer(rw.limit)
	rw.startC = rw.startT.C
	return rw
}

// handle applies one event; a non-empty reason ends the agent's life.
func (rw *readyWatch) handle(ev readyEvent) (wire.StopReason, string) {
	g := rw.g
	switch ev.kind {
	case readyUp:
		if !rw.up {
			rw.startT.Stop()
			rw.startC = nil
			rw.up = true
			took := time.Since(rw.began)
			// The owner hears it first: a start waits on it, the
			// log does not.
			g.send(message{Type: wire.MsgAgentReady, Detail: rw.status})
			g.logf("agent ready after %v (%s)", took.Round(time.Millisecond), g.req.Readiness.Ready)
			rw.becameReady()
		}
	case readyStatus:
		rw.status = ev.status
		g.send(message{Type: wire.MsgStatus, Detail: ev.status})
	case readyMainPID:
		rw.mainPID = ev.pid
		g.logf("the agent names pid %d as its main process", ev.pid)
		g.send(message{Type: wire.MsgStatus, Detail: rw.status, MainPID: ev.pid})
	case readyExtend:
		if !rw.up {
			rw.startT.Reset(ev.extend)
			rw.limit = time.Since(rw.began) + ev.extend
		}
	case readyPing:
		if rw.dogT != nil {
			rw.dogT.Reset(rw.dog)
		}
	case readyTrigger:
		return wire.ReasonWatchdog, "the agent asked for its watchdog action (WATCHDOG=trigger)"
	case readyUnhealthy:
		h := g.req.Readiness.Health
		return wire.ReasonUnhealthy, fmt.Sprintf("%d health checks in a row failed; last: %v", h.Failures, ev.err)
	case readyFDClosed:
		if !rw.up {
			return wire.ReasonNotReady, fmt.Sprintf("the agent closed descriptor %d without writing the newline that says it is ready", g.req.Readiness.Ready.FD)
		}
	}
	return "", ""
}

// becameReady arms the watchdog and the health check.
func (rw *readyWatch) becameReady() {
	if rw.dog > 0 {
		rw.dogT = time.NewTimer(rw.dog)
		rw.dogC = rw.dogT.C
	}
	r := rw.g.readiness
	if err := r.monitor(); err != nil {
		rw.g.logf("health check not started: %v", err)
	}
}

// notReady says why the start timed out.
func (rw *readyWatch) notReady() string {
	s := fmt.Sprintf("not ready within %v (%s)", rw.limit.Round(time.Millisecond), rw.g.req.Readiness.Ready)
	if rw.status != "" {
		s += "; its last status: " + rw.status
	}
	return s
}

func (rw *readyWatch) stop() {
	if rw.startT != nil {
		rw.startT.Stop()
	}
	if rw.dogT != nil {
		rw.dogT.Stop()
	}
}

// kindSupported says whether this system can take a readiness of kind k:
// Windows has no unix datagram sockets (notify) and no numbered
// descriptors to inherit (fd).
func kindSupported(k probe.Kind) bool {
	return runtime.GOOS != "windows" || (k != probe.KindNotify && k != probe.KindFD)
}
