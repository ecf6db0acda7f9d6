package service

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/lease"
	"github.com/tether-dev/tether/service/state"
	"github.com/tether-dev/tether/wire"
)

type cmdKind int

const (
	cmdStart cmdKind = iota
	cmdStop
	cmdRestart
	cmdReconfigure // the config changed: restart if running
	cmdRemove      // removed from the config: stop and end
	cmdShutdown    // the service is exiting: stop, intent unchanged
	cmdDepStop     // a required agent is going: stop, intent unchanged
	cmdFreeze      // an upgrade: detach the session, say what is known, wait for the thaw
	cmdResume      // the machine resumed: start now what waits (see wake)
)

var cmdNames = [...]string{
	cmdStart: "start", cmdStop: "stop", cmdRestart: "restart", cmdReconfigure: "reconfigure",
	cmdRemove: "remove", cmdShutdown: "shutdown", cmdDepStop: "dependency stop", cmdFreeze: "freeze",
	cmdResume: "resume",
}

func (k cmdKind) String() string {
	if int(k) < len(cmdNames) {
		return cmdNames[k]
	}
	return fmt.Sprintf("cmdKind(%d)", int(k))
}

type command struct {
	kind   cmdKind
	reply  chan error // nil: nobody waits
	noWait bool       // start, restart: answer once spawned, not once ready
	cause  *api.Error // dep stop: why
	freeze chan<- *frozenActor
	// stopped, for a reconfigure, hears once the old tree is stopped
	// (at once when none runs), with the stop's outcome.
	stopped chan error
}

// startWaiter is a caller waiting for a start to settle: once the agent
// is ready, or only spawned (noWait).
type startWaiter struct {
	reply  chan error
	noWait bool
}

// actor runs one agent: every change of its state happens on its own
// goroutine, so start, stop, session events and timers never race.
type actor struct {
	c    *Controller
	id   string
	cmds chan command
	cfgc chan config.Agent
	done chan struct{} // closed when run returns

	// guardianVersion is the protocol version of the running guardian
	// (0: none), for an upgrade's check, which reads it from elsewhere.
	guardianVersion atomic.Int32

	// Owned by run.
	cfg        config.Agent
	row        api.Agent
	session    *guardian.Session
	events     <-chan guardian.Event
	timer      *time.Timer
	timerC     <-chan time.Time
	timerDue   time.Time
	awaiting   chan attachResult // an upgrade's successor: the session to come
	leader     platform.Ref      // and the leader of its tree, as the service before knew it
	adoptIdle  bool              // not to run: adopt a tree that outlived the service, and stop it
	depc       chan struct{}     // a dependency's row changed
	depWait    bool              // the start waits for dependencies
	depErr     *api.Error        // stopped with a dependency: why
	pending    bool              // spawned, its readiness check not passed yet
	want       bool              // the agent should be running
	parked     bool              // failed and not started again (a crash loop), on disk too; see park
	stopAsked  bool              // a stop was sent to the guardian
	stopSince  time.Time         // when
	restartArm bool              // start again once stopped
	restartWhy string            // why it restarts, when the status of the start to come is to say so
	ending     bool              // removed or shutting down: end once stopped
	backoff    time.Duration
	failures   []time.Time // the failures that may make a crash loop, oldest first
	startedAt  time.Time
	contention time.Time // when contention began
	contDelay  time.Duration
	leftover   bool              // processes its dead guardian left could not be stopped
	unclaimed  bool              // its guardian died and no guardian has freed the identity since
	startWait  []startWaiter     // answered when a start settles
	stopWait   []chan error      // answered when a stop settles
	held       *guardian.Holding // see watchHeld
	// elsewhere is the holder of the identity in etcd, another host or
	// profile, while the agent waits for it to let go (elsewhereC); see
	// waitElsewhere.
	elsewhere     *lease.HeldElsewhere
	elsewhereC    <-chan struct{}
	elsewhereStop context.CancelFunc
	leaseDelay    time.Duration // the pause before the next try when etcd could not be reached
	heldWait      time.Duration
	heldTimer     *time.Timer
	heldC         <-chan time.Time
	offline       context.CancelFunc // waiting for what it needs (see goOffline)
	reachc        <-chan struct{}    // and hears here that it is reachable
	freeSleep     int                // the suspend whose free restart it had (see excused)
}

// newActor makes the actor of a. An agent parked by an earlier run of
// the service (parked, see parkedFor) begins as it was left: enabled,
// failed with the parking's error, and not started.
func newActor(c *Controller, a config.Agent, parked *state.Parked) *actor {
	act := &actor{
		c: c, id: a.ID, cfg: a,
		cmds: make(chan command, 16),
		cfgc: make(chan config.Agent, 1),
		depc: make(chan struct{}, 1),
		done: make(chan struct{}),
	}
	act.row = api.Agent{ID: a.ID, Identity: a.Identity, State: api.StateStopped, Since: time.Now().UTC()}
	if parked != nil {
		act.want, act.parked = true, true
		act.row.State, act.row.Enabled, act.row.Since = api.StateFailed, true, parked.Since
		act.row.Error = &api.Error{Code: parked.Code, Message: parked.Message, Last: parked.Last, Time: parked.Since}
		c.logf("agent %q: parked since %s (%s): not started until someone starts it", a.ID, parked.Since.Local().Format(time.DateTime), parked.Code)
	}
	return act
}

// send queues a command without waiting.
func (a *actor) send(cmd command) { a.cmds <- cmd }

// do sends a command and waits for its outcome or ctx.
func (a *actor) do(ctx context.Context, kind cmdKind) error {
	return a.begin(ctx, command{kind: kind})()
}

// begin sends a command and returns the wait for its outcome.
func (a *actor) begin(ctx context.Context, cmd command) (wait func() error) {
	reply := make(chan error, 1)
	cmd.reply = reply
	select {
	case a.cmds <- cmd:
	case <-a.done:
		return func() error { return errEnded }
	case <-ctx.Done():
		return ctx.Err
	}
	return func() error { return a.await(ctx, reply) }
}

func (a *actor) await(ctx context.Context, reply chan error) error {
	select {
	case err := <-reply:
		return err
	case <-a.done:
		// It ended right after answering, or without taking the
		// command.
		select {
		case err := <-reply:
			return err
		default:
			return errEnded
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *actor) setConfig(cfg config.Agent) {
	select {
	case <-a.cfgc:
	default:
	}
	a.cfgc <- cfg
}

// errEnded answers commands to an agent that was removed or shut down.
var errEnded = &api.Error{Code: api.CodeInternal, Message: "the agent was removed or the service is shutting down"}

func (a *actor) run() {
	defer close(a.done)
	defer a.stopHeldTimer()
	defer a.stopElsewhere()
	a.c.awaitSweep(a.id)
	from := a.state()
	a.awaitSession()
	a.adoptUnwanted()
	if a.session == nil {
		if h := a.inspectHeld(); h != nil {
			a.watchHeld(h)
		}
	}
	a.moved(from, "the actor's start", false)
	for {
		from := a.state()
		var step string
		var ended bool
		select {
		case cmd := <-a.cmds:
			step, ended = cmd.kind.String(), a.handle(cmd)
		case ev, ok := <-a.events:
			if !ok {
				a.events = nil
				continue
			}
			step, ended = string(ev.Type), a.event(ev)
		case <-a.timerC:
			a.timerC = nil
			step = "the timer"
			if a.want && a.session == nil {
				a.start()
			}
		case <-a.depc:
			step = "a dependency's change"
			a.depsChanged()
		case <-a.heldC:
			a.heldC = nil
			step = "a recheck of the held identity"
			a.recheckHeld()
		case <-a.reachc:
			step = "what it needs is reachable"
			a.reachable()
		case <-a.elsewhereC:
			step = "the holder elsewhere let go"
			a.elsewhereGone()
		}
		a.moved(from, step, ended)
		if ended {
			return
		}
	}
}

// handle applies a command and reports whether the actor has ended.
func (a *actor) handle(cmd command) bool {
	select {
	case cfg := <-a.cfgc:
		a.cfg = cfg
		a.row.Identity = cfg.Identity
	default:
	}
	switch cmd.kind {
	case cmdFreeze:
		a.frozen(cmd.freeze)
	case cmdResume:
		a.wake()
	case cmdStart:
		a.want = true
		a.unpark()
		a.failures, a.backoff = nil, 0
		if a.session == nil {
			// A new series, counted anew: its restarts, as the
			// failures a crash loop counts.
			a.row.Restarts = 0
		}
		a.contention = time.Time{}
		a.depErr = nil
		a.wait(cmd)
		switch {
		case a.session != nil && a.stopAsked:
			a.restartArm = true
		case a.session != nil:
			a.settleStarts()
		case a.depWait:
			// Already waiting for its dependencies.
		default:
			a.stopTimer()
			a.start()
		}
	case cmdStop, cmdRemove, cmdShutdown, cmdDepStop:
		if cmd.kind != cmdShutdown {
			a.want = false
		}
		if cmd.kind == cmdStop || cmd.kind == cmdRemove {
			// Stopped by hand, or gone from the config: no longer
			// parked. A shutdown or a dependency's stop leaves it so.
			a.unpark()
		}
		a.depWait = false
		a.stopElsewhere()
		if cmd.kind == cmdDepStop && a.session != nil {
			a.depErr = cmd.cause
		}
		a.restartArm = false
		a.ending = cmd.kind == cmdRemove || cmd.kind == cmdShutdown
		a.stopTimer()
		a.answerStarts(&api.Error{Code: api.CodeInternal, Message: "stopped before it started"})
		if cmd.reply != nil {
			if a.session != nil && a.row.State == api.StateCleanupFailed {
				// Already known to be unconfirmed: say so now;
				// the guardian goes on retrying.
				cmd.reply <- errOrNil(a.row.Error)
			} else {
				a.stopWait = append(a.stopWait, cmd.reply)
			}
		}
		if a.session == nil && a.held != nil {
			// Not this service's guardian: it goes on retrying
			// whatever is asked here. A stop hears that it is not
			// confirmed; a shutdown or removal is not refused.
			var err error
			if !a.ending {
				err = errOrNil(a.row.Error)
			}
			a.answer(&a.stopWait, err)
			return a.ending
		}
		if a.session == nil {
			// A dead guardian's tree, waiting for a restart to take
			// it over, is stopped now, and so is what it left here
			// that could not be stopped before.
			e := a.claim()
			if e == nil && a.leftover {
				if _, e = a.stopOrphans(0); e == nil {
					a.leftover = false
				}
			}
			if e != nil {
				a.setState(api.StateCleanupFailed, e)
				a.answer(&a.stopWait, e)
				return a.ending
			}
			if a.row.State != api.StateFailed || cmd.kind == cmdStop {
				a.row.Status = ""
				a.setState(api.StateStopped, nil)
			}
			a.answer(&a.stopWait, nil)
			return a.ending
		}
		a.requestStop()
	case cmdRestart, cmdReconfigure:
		if cmd.kind == cmdRestart {
			a.want = true
		}
		// A restart, or a changed config entry, is a fresh start: the
		// count of quick endings (the crash loop's) begins again.
		a.unpark()
		a.failures, a.backoff = nil, 0
		a.wait(cmd)
		if a.session == nil {
			if cmd.stopped != nil {
				cmd.stopped <- nil
			}
			if a.want {
				a.stopTimer()
				a.start()
			} else {
				a.answerStarts(nil)
			}
			return false
		}
		a.restartArm = true
		if cmd.stopped != nil {
			if a.row.State == api.StateCleanupFailed {
				// Already known to be unconfirmed; the guardian
				// goes on retrying.
				cmd.stopped <- errOrNil(a.row.Error)
			} else {
				a.stopWait = append(a.stopWait, cmd.stopped)
			}
		}
		a.requestStop()
	}
	return false
}

func (a *actor) requestStop() {
	if !a.stopAsked {
		a.stopAsked, a.stopSince = true, time.Now()
		a.setState(api.StateStopping, a.row.Error)
		if err := a.session.RequestStop(a.cfg.StopTimeout); err != nil {
			// The guardian is gone; its lost event follows.
			_ = err
		}
	}
}

// setSession makes s (nil: none) the agent's session.
func (a *actor) setSession(s *guardian.Session) {
	a.session, a.events = s, nil
	v := 0
	if s != nil {
		a.events, v = s.Events(), s.Version()
	}
	a.guardianVersion.Store(int32(v))
}

func (a *actor) stopTimer() {
	if a.timer != nil {
		a.timer.Stop()
	}
	a.timerC = nil
	a.stopOffline()
}

func (a *actor) schedule(d time.Duration) {
	a.stopTimer()
	a.timer = time.NewTimer(d)
	a.timerC = a.timer.C
	a.timerDue = time.Now().Add(d)
}

func (a *actor) answer(waiters *[]chan error, err error) {
	for _, w := range *waiters {
		w <- err
	}
	*waiters = nil
}

// wait queues the caller of a start or restart.
func (a *actor) wait(cmd command) {
	if cmd.reply != nil {
		a.startWait = append(a.startWait, startWaiter{cmd.reply, cmd.noWait})
	}
}

// answerStarts answers every caller waiting for a start.
func (a *actor) answerStarts(err error) {
	for _, w := range a.startWait {
		w.reply <- err
	}
	a.startWait = nil
}

// settleStarts answers the starts that are settled by a running session:
// all of them once the agent is ready, only the noWait ones while its
// readiness check is pending.
func (a *actor) settleStarts() {
	if !a.pending {
		a.answerStarts(nil)
		return
	}
	kept := a.startWait[:0]
	for _, w := range a.startWait {
		if w.noWait {
			w.reply <- nil
		} else {
			kept = append(kept, w)
		}
	}
	a.startWait = kept
}

// setState publishes the agent's row. Every outcome replaces the error
// before it: an older, unrelated message never hides a newer one.
func (a *actor) setState(s api.State, err *api.Error) { a.setStateAt(s, err, time.Now().UTC()) }

// setStateAt is setState with the time the row says it changed.
func (a *actor) setStateAt(s api.State, err *api.Error, at time.Time) {
	prev := a.row
	a.row.State = s
	a.row.Since = at
	if err != nil && err.Time.IsZero() {
		// A copy: whoever was answered with err may be reading it.
		e := *err
		e.Time = at
		err = &e
	}
	a.row.Error = err
	a.row.Enabled = a.want
	a.row.Waiting = a.waiting()
	if line := rowEvent(prev, a.row); line != "" {
		a.c.logf("%s", line)
	}
	a.c.publish(a.row)
}

// spec is the guardian's view of the agent.
func (a *actor) spec(env []string) guardian.Spec {
	argv := append([]string(nil), a.cfg.Command...)
	if argv[0] == "tether" {
		argv[0] = a.c.opts.Executable
	}
	p := a.c.opts.Paths
	return guardian.Spec{
		Identity: a.cfg.Identity, Profile: p.Profile, Argv: argv, Dir: a.cfg.Dir, Env: env,
		StopTimeout: a.cfg.StopTimeout, LockDir: p.LockDir, PrivateRoot: p.PrivateRoot,
		LogPath: p.LogPath(a.id), Logs: a.cfg.Logs, Executable: a.c.opts.Executable,
		Readiness:    readiness(a.cfg, p),
		SurviveCrash: a.cfg.SurviveCrash, AdoptPath: p.AdoptPath(a.cfg.Identity),
		Agent: a.id, Fingerprint: a.cfg.Fingerprint(),
	}
}

// stopLeft is the stop timeout what a dead guardian left gets: all of it,
// or, when the guardian died in the middle of a stop, what is left of it
// (at least a millisecond: zero would mean the default).
func (a *actor) stopLeft() time.Duration {
	if a.stopAsked {
		return max(a.cfg.StopTimeout-time.Since(a.stopSince), time.Millisecond)
	}
	return a.cfg.StopTimeout
}

// reclaim frees the identity after its guardian died: the tree it
// abandoned still runs and holds the lock. It blocks the actor for at
// most the tree's stop timeout and the kill grace. A guardian that died
// in the middle of a stop had already asked the tree to end: the tree
// gets what is left of its stop timeout, not a second one.
func (a *actor) reclaim() *api.Error {
	spec := a.spec(nil)
	spec.StopTimeout = a.stopLeft()
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.StopTimeout+30*time.Second)
	defer cancel()
	if err := guardian.Reclaim(ctx, spec); err != nil {
		return cleanupError("freeing the identity after its guardian died: ", err)
	}
	return nil
}

// stopOrphans stops what a dead guardian's tree left with the service
// (see Options.Orphans), giving it timeout between SIGTERM and SIGKILL,
// and returns what it stopped (nil for nothing). A failure leaves the
// agent unable to start until a retry succeeds (leftover).
func (a *actor) stopOrphans(timeout time.Duration) (*OrphanReport, *api.Error) {
	rep, err := a.c.stopOrphans(timeout)
	if err != nil {
		a.leftover = true
		return nil, &api.Error{Code: api.CodeCleanupFailed, Message: "stopping what the dead guardian left: " + err.Error()}
	}
	return rep, nil
}

// claim frees the identity if its guardian died and nothing has freed it
// since (see reclaim).
func (a *actor) claim() *api.Error {
	if !a.unclaimed {
		return nil
	}
	a.unclaimed = false
	return a.reclaim()
}

// start asks for a guardian. It blocks the actor for at most the
// handshake: commands queue meanwhile.
func (a *actor) start() {
	if a.held != nil {
		// The identity is still held by a guardian that could not
		// confirm its tree dead: starting is for when it lets go.
		a.answerStarts(a.row.Error)
		return
	}
	// A tree that outlived the service before runs already: it is
	// adopted whatever its dependencies do now.
	if a.adopt() {
		return
	}
	if !a.depsReady() {
		return
	}
	if a.unmet(nil) {
		return
	}
	if a.leftover {
		// Never a second tree beside what the last one left.
		if _, e := a.stopOrphans(0); e != nil {
			a.setState(api.StateCleanupFailed, e)
			a.answerStarts(e)
			return
		}
		a.leftover = false
	}
	a.stopElsewhere()
	a.row.Status, a.restartWhy = a.restartWhy, ""
	a.setState(api.StateStarting, a.row.Error)
	// With a lease, etcd commits the hold while the start is prepared
	// here and by the guardian (the lock, the containment, the private
	// directory); the agent starts only once it is held there too (I10,
	// D214).
	var hold <-chan holding
	if a.leased() {
		hold = a.c.leases.acquireAsync(a.id, a.cfg.Identity)
	}
	env, e := a.environ()
	if e != nil {
		a.dropHold(hold)
		a.fail(e)
		return
	}
	spec := a.spec(env)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var s *guardian.Session
	var err error
	if hold != nil {
		held, berr := a.c.pool.Begin(spec)
		if berr != nil {
			cancel()
			a.dropHold(hold)
			a.startFailed(berr)
			return
		}
		h := <-hold
		if h.err != nil {
			held.Abort()
			cancel()
			a.leaseFailed(h.err)
			return
		}
		s, err = held.Go(ctx, []string{"TETHER_FENCE=" + h.fence.String()}, h.deadline)
	} else {
		s, err = a.c.pool.Start(ctx, spec)
	}
	cancel()
	if err != nil {
		a.releaseLease()
		a.startFailed(err)
		return
	}
	a.leaseDelay = 0
	a.began(s, time.Now())
	if a.leased() {
		a.c.leases.run(a.id, s)
	}
}

// began takes s, whose agent started at since (just now, or before an
// adoption), as the agent's session, and settles the starts it answers.
func (a *actor) began(s *guardian.Session, since time.Time) {
	a.take(s, since)
	if a.pending {
		// Spawned, not ready: starting until its check passes (I8).
		a.setState(api.StateStarting, nil)
	} else {
		a.setState(api.StateRunning, nil)
	}
	a.settleStarts()
}

// take makes s, whose agent started at since, the agent's session, and
// records the run.
func (a *actor) take(s *guardian.Session, since time.Time) {
	a.setSession(s)
	a.unclaimed = false // the new guardian took over whatever was left
	a.stopAsked = false
	a.contention, a.contDelay = time.Time{}, 0
	a.startedAt = since
	r := s.Ready()
	a.row.PID, a.row.GuardianPID = r.AgentPID, r.GuardianPID
	a.row.Containment = r.Containment
	tree := treeOf(r)
	a.c.setTree(a.id, &tree)
	a.pending = r.Pending
	a.recordRun(func(run *state.Run) { *run = state.Run{Started: a.startedAt.UTC(), PID: r.AgentPID} })
}

func (a *actor) startFailed(err error) {
	code := startCode(err)
	if h := a.heldBy(err); h != nil {
		a.watchHeld(h)
		a.answerStarts(a.row.Error)
		return
	}
	if code == api.CodeContention {
		now := time.Now()
		if a.contention.IsZero() {
			a.contention, a.contDelay = now, 20*time.Millisecond
		}
		ae := &api.Error{Code: api.CodeContention, Message: startMessage(err)}
		if now.Sub(a.contention) < a.c.opts.ContentionWindow {
			// An old guardian may still be cleaning up after a crash:
			// retry soon and often, for a bounded time.
			// Whoever asked hears of the contention now (exit 4);
			// the retries go on in the background.
			a.setState(api.StateBackoff, ae)
			a.answerStarts(ae)
			a.schedule(a.contDelay)
			a.contDelay = min(2*a.contDelay, time.Second)
			return
		}
		a.fail(ae)
		return
	}
	a.fail(&api.Error{Code: code, Message: startMessage(err)})
}

// fail leaves the agent failed with its reason: parked (see settle),
// since starting it again would fail the same way.
func (a *actor) fail(e *api.Error) {
	a.recordRun(func(run *state.Run) {
		run.Error = &state.RunError{Code: e.Code, Message: e.Message}
	})
	a.settle(api.StateFailed, e)
	a.answerStarts(e)
}

// settle leaves an agent that has no tree in state s with e. A wanted
// agent left failed is parked, durably, whatever the failure: failed
// says it is not started again until someone starts it, and a restart
// of the service (or its relaunch by its manager, or an upgrade) is no
// one starting it (D204).
func (a *actor) settle(s api.State, e *api.Error) {
	if s == api.StateFailed && a.want {
		a.park(e)
		return
	}
	a.setState(s, e)
}

func (a *actor) recordRun(f func(*state.Run)) {
	a.c.recordRun(func(s *state.State) {
		ag := s.Agents[a.id]
		if ag.LastRun == nil {
			ag.LastRun = &state.Run{}
		}
		f(ag.LastRun)
		s.Agents[a.id] = ag
	})
}

// event handles a report of the running session and reports whether the
// actor has ended.
func (a *actor) event(ev guardian.Event) bool {
	switch ev.Type {
	case guardian.EventExited:
		a.recordRun(func(run *state.Run) { run.Exit = ev.Exit.String() })
		a.agentGone()
		return false
	case guardian.EventCleanupFailed:
		e := cleanupError("", ev.Err)
		a.setState(api.StateCleanupFailed, e)
		a.answer(&a.stopWait, e)
		return false
	case guardian.EventAgentReady:
		a.pending = false
		a.row.Status = ev.Status
		if !a.stopAsked {
			a.setState(api.StateRunning, nil)
		}
		a.settleStarts()
		return false
	case guardian.EventAttached:
		a.attached(ev)
		return false
	case guardian.EventStatus:
		a.row.Status = ev.Status
		if ev.MainPID > 0 {
			a.row.PID = ev.MainPID
		}
		a.c.publish(a.row)
		return false
	}
	// stopped or lost: the session is over.
	now := time.Now()
	e := a.sessionOver(ev, now)
	if a.stopAsked {
		return a.settleStop(e)
	}
	a.ended(ev, e, now)
	return false
}

// sessionOver forgets the session that ended (stopped or lost) at now,
// records how its run ended, and returns the error the row is to carry:
// a cleanup that did not finish, or the guardian's death. A dead
// guardian's tree is stopped here unless a start follows soon (which
// takes the tree over).
func (a *actor) sessionOver(ev guardian.Event, now time.Time) *api.Error {
	e := a.sessionEnded(ev, now)
	// In etcd the identity is let go once its tree is known dead: a
	// teardown that finished, or a dead guardian's tree stopped here.
	if ev.Type == guardian.EventStopped || (!a.unclaimed && !a.leftover) {
		a.releaseLease()
	}
	return e
}

// sessionEnded is sessionOver, but for the lease.
func (a *actor) sessionEnded(ev guardian.Event, now time.Time) *api.Error {
	a.setSession(nil)
	a.pending = false
	a.row.PID, a.row.GuardianPID, a.row.Containment = 0, 0, ""
	a.c.setTree(a.id, nil)
	a.recordRun(func(run *state.Run) {
		run.Stopped = now.UTC()
		if ev.Exit != nil {
			run.Exit = ev.Exit.String()
		}
		if ev.Err != nil {
			run.Error = &state.RunError{Code: api.CodeCleanupFailed, Message: ev.Err.Error()}
		}
	})
	switch {
	case ev.Type == guardian.EventLost:
		e := &api.Error{Code: api.CodeInternal, Message: ev.Err.Error()}
		// The tree lost its owner, and came back here whatever its
		// containment (the service is a child subreaper): it is stopped
		// now, not when a restart takes it over after the backoff.
		rep, oe := a.stopOrphans(a.stopLeft())
		if oe != nil {
			e = oe
		} else if rep != nil {
			e.Message += "; " + rep.String()
		}
		// A guardian's death is a failure of the run.
		restarting := !a.stopAsked && a.want && a.cfg.Restart.Restarts(true)
		a.unclaimed = true
		if !restarting || a.restartArm || rep.Of(a.cfg.Identity) == 0 {
			// Nobody will start the identity again soon, or its tree
			// did not come back here (no subreaper on this system):
			// free it now rather than when a restart takes it over.
			if rerr := a.claim(); rerr != nil {
				e = rerr
			}
		}
		return e
	case ev.Err != nil:
		return cleanupError("", ev.Err)
	}
	return nil
}

// settleStop settles a stop that was asked for: it answers the stop, then
// ends the actor, starts the agent again (a restart) or answers the
// starts that waited. It reports whether the actor has ended.
func (a *actor) settleStop(e *api.Error) bool {
	a.stopAsked = false
	// The stop's answer is its cleanup's outcome; the row also says why
	// it stopped, when a required agent took it down.
	rowErr := e
	if rowErr == nil {
		rowErr = a.depErr
	}
	a.depErr = nil
	if a.leftover {
		a.setState(api.StateCleanupFailed, rowErr)
	} else {
		a.setState(api.StateStopped, rowErr)
	}
	a.answer(&a.stopWait, errOrNil(e))
	if a.ending {
		return true
	}
	if a.restartArm && a.want {
		a.restartArm = false
		a.row.Restarts++
		a.start()
	} else {
		a.answerStarts(nil)
	}
	return false
}

// ended handles an agent that ended, or whose guardian died,
// without a stop: by its restart policy it stays stopped or failed, is
// parked as a crash loop, or is started again after a backoff.
func (a *actor) ended(ev guardian.Event, e *api.Error, now time.Time) {
	if a.leftover {
		// What its dead guardian left could not be stopped: no new
		// tree until it is.
		a.answerStarts(errOrNil(e))
		a.setState(api.StateCleanupFailed, e)
		return
	}
	if ev.Reason == wire.ReasonDeadline && e == nil {
		// Not the agent's failure: its lease could not be renewed,
		// and it is held again once etcd answers.
		e = &api.Error{Code: api.CodeLease, Message: "the identity's lease in etcd could not be renewed in time: the tree was stopped before the lease could expire; " + ev.Detail}
		a.answerStarts(e)
		if a.want {
			a.leaseRetry(e)
		} else {
			a.setState(api.StateStopped, e)
		}
		return
	}
	failed := ev.Type == guardian.EventLost || ev.Exit == nil || ev.Exit.Code != 0
	if code, ok := checkCodes[ev.Reason]; ok && e == nil {
		// A check stopped it: that is a failure, whatever the exit.
		failed = true
		e = &api.Error{Code: code, Message: ev.Detail}
		if code == api.CodeNotReady {
			// Never ready: restarting would fail the same way.
			a.fail(e)
			return
		}
	}
	left := leftBehind(ev)
	if e == nil && (failed || left != "") {
		what := "the agent ended"
		if ev.Exit != nil {
			what = "the agent exited: " + ev.Exit.String()
		}
		e = &api.Error{Code: api.CodeExited, Message: what + left}
	}
	// A start still waiting for readiness hears how it ended.
	a.answerStarts(errOrNil(e))
	if !a.want || !a.cfg.Restart.Restarts(failed) {
		if failed {
			a.settle(api.StateFailed, e)
		} else {
			a.setState(api.StateStopped, e)
		}
		return
	}
	r := a.cfg.Retry
	if now.Sub(a.startedAt) >= r.HealthyAfter {
		a.failures, a.backoff = nil, 0
	}
	if a.unmet(e) || a.excused(e, now) {
		// The network's doing, or the suspend's: not a failure of the
		// agent's.
		return
	}
	if a.crashLoop(now) {
		last := "the agent exited"
		if ev.Exit != nil {
			last += ": " + ev.Exit.String()
		}
		if e != nil {
			last = e.Message
		}
		a.park(&api.Error{Code: api.CodeCrashLoop, Last: e,
			Message: fmt.Sprintf("failed %d times within %s (%s since it was started); last: %s", len(a.failures), human.Duration(r.CrashLoop.Within),
				human.Count(a.row.Restarts, "restart", "restarts"), last)})
		return
	}
	if a.backoff == 0 {
		a.backoff = r.Backoff
	} else {
		a.backoff = min(2*a.backoff, r.MaxBackoff)
	}
	a.row.Restarts++
	a.setState(api.StateBackoff, e)
	a.schedule(a.backoff)
}

// leftBehind says what an agent that exited left running, which its
// guardian then stopped, as the end of a message; "" when it left
// nothing.
func leftBehind(ev guardian.Event) string {
	c := ev.Cleanup
	if ev.Reason != wire.ReasonAgentExited || c == nil || c.Terminated+c.Killed == 0 {
		return ""
	}
	n := max(c.Terminated, c.Killed)
	s := fmt.Sprintf("; it left %d process%s running, which tether stopped", n, map[bool]string{true: "", false: "es"}[n == 1])
	if c.Killed > 0 {
		s += fmt.Sprintf(" (%d with SIGKILL, after the stop timeout)", c.Killed)
	}
	return s
}

func errOrNil(e *api.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// park leaves the agent failed with e (a crash loop, or any failure
// settle parks), not to be started again until
// someone starts, restarts or stops it or its config entry changes, and
// keeps that across restarts of the service (state.Parked). The record
// is on disk before the row says failed, so a service killed at any
// moment after is parked again when it comes back.
func (a *actor) park(e *api.Error) {
	a.parked = true
	now := time.Now().UTC()
	a.c.saveParked(a.id, &state.Parked{Since: now, Code: e.Code, Message: e.Message, Last: e.Last, Config: a.cfg.Fingerprint()})
	a.setStateAt(api.StateFailed, e, now)
}

// unpark ends a parking, on disk too. A change of intent clears the
// record as well (the controller's start and stop save one), but a
// restart by the config's reload does not, and the disk must not keep
// a parking the row no longer shows.
func (a *actor) unpark() {
	if a.parked {
		a.parked = false
		a.c.saveParked(a.id, nil)
	}
}
