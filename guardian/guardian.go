package guardian

import (
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

	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/logfile"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

const (
	// recordWait bounds the wait for another guardian's record lock.
	recordWait = 2 * time.Second
	// defaultKillGrace is how long the system gets to finish off a tree
	// after the kill before the tree counts as alive.
	defaultKillGrace = 2 * time.Second
	// writeWait bounds one write to the owner, so an owner that stopped
	// reading cannot stall a teardown.
	writeWait = 2 * time.Second
	// settleDelay is how long after ready the guardian lets go of the
	// memory its start-up needed (settle): the start is over by then.
	settleDelay = 100 * time.Millisecond
	// retryMax caps the backoff between cleanup retries.
	retryMax = 30 * time.Second
)

// guardian is one guardian process's state. What every platform shares is
// here; osGuardian (guardian_unix.go, guardian_windows.go) holds the
// lock, containment and agent handles of one platform.
type guardian struct {
	conn  tetherConn // nil while the owner is gone and an adopter awaited
	outMu sync.Mutex

	req    request
	self   platform.Ref // this process, found while waiting (prepare)
	key    string
	log    *logfile.Writer // the agent's log: its lines and the guardian's
	output *output         // the agent's stdout and stderr, on their way to log
	rec    *recordFile
	own    *record // what rec says of this guardian, once written
	locked bool    // the ownership lock is held

	// held is this guardian's place in its owner's count of the
	// guardians that hold an identity (see siblings), from when it
	// takes the lock until it lets it go; nil when it takes none.
	held       *siblingCount
	privateDir string
	agentPid   int
	agentExit  <-chan wire.Exit
	since      time.Time
	tookOver   *wire.Holder
	readiness  *readiness // nil without a readiness or health check
	// deadline is when the tree must be dead, on this process's
	// monotonic clock, unless the owner renews it: the agent's identity
	// is held under a lease (request.Deadline, or the go of a held
	// start). Zero without one.
	deadline time.Time
	// givenUp says the owner gave a held start up (EOF before its go):
	// what was prepared is undone, and nothing is said of it.
	givenUp bool
	// reclaims are the reclaims under way of the trees of guardians
	// that died with the owner (Unix, see reclaimSiblings): the
	// guardian exits only once they end. None starts once the
	// teardown waits for them (reclaimsDone, under reclaimMu).
	reclaims     sync.WaitGroup
	reclaimMu    sync.Mutex
	reclaimsDone bool

	osGuardian
}

// osSteps are the steps of a guardian's life that differ by OS.
// guardian_unix.go (flock, session, cgroup, reaper) and
// guardian_windows.go (named mutex, job object, owner handle) implement
// them on *guardian; start, watch, teardown and release call them and are
// written once. Beside them each OS has its Main and run (how the tether
// arrives, which signals end the agent's life), redirectOutput,
// platformEnv, containmentCleanupCode, and the command lookup's pieces
// (lookpath.go).
type osSteps interface {
	// acquire takes the identity's ownership lock, with the owner record
	// locked and prev the record read under it (nil when there is
	// none). A lock held by a live guardian is contention; on Unix, one
	// held only by the tree of a dead guardian is taken over.
	acquire(prev *record) *wire.Failure
	// clearEarlier runs once the lock is held: it stops and removes
	// what an earlier holder that died left behind (its tree, private
	// directory, containment) and sets tookOver when there was one.
	clearEarlier(prev *record) *wire.Failure
	// contain creates the agent's containment, if any, named after the
	// private directory's name, and notes it in self, the record about
	// to be written.
	contain(name string, self *record) *wire.Failure
	// spawn starts the agent in its containment and returns its
	// reference and a channel that yields its exit.
	spawn(c *agentCommand) (procRef, <-chan wire.Exit, *wire.Failure)

	// stopTree stops the whole tree within timeout and the kill grace;
	// an error means it could not be confirmed empty (*treeAliveError
	// when members are left).
	stopTree(timeout time.Duration) (stopReport, error)
	// afterStop runs once the tree is confirmed empty.
	afterStop()
	// removeContainment removes what contain created.
	removeContainment() error
	// unlockOwnership releases what acquire took; closeOwnership closes
	// its handles, held or not.
	unlockOwnership() error
	closeOwnership()

	// containment names the rung of containment in use; describe adds
	// the OS's details to a ready.
	containment() wire.Containment
	describe(r *wire.Ready)
	// ownerEOF returns when the owner's death was first seen, given at,
	// when this guardian read the tether's EOF: on Linux the earliest
	// any guardian of the same owner saw, and then the others that woke
	// with this one run first.
	ownerEOF(at time.Time) time.Time
	// ownerGone is closed when the owner is seen dead by other means
	// than the tether's EOF (nil when there are none).
	ownerGone() <-chan struct{}
	// settle runs a moment after ready, when the start is over.
	settle()
	// siblings counts the guardians of the same owner that tear down
	// after its death (see teardown); nil where the OS has no count.
	siblings() siblings
	// watchOwner makes r the owner to watch from now on (attach: a new
	// owner took the tether over); nil stops watching (the owner is
	// gone). Unix watches the tether alone.
	watchOwner(r *procRef) error
	// prepareOS is the OS's part of prepare: what contain and spawn
	// need that no request decides.
	prepareOS()
}

var _ osSteps = (*guardian)(nil)

// stopReport says how a tree went down.
type stopReport struct {
	Terminated int  // processes asked to stop
	Killed     int  // processes still there at the deadline, killed
	Forced     bool // the stop timeout ran out (or the request could not be made)
}

func (r *stopReport) add(more stopReport) {
	r.Terminated += more.Terminated
	r.Killed += more.Killed
	r.Forced = r.Forced || more.Forced
}

// treeAliveError is a stop that left processes alive.
type treeAliveError struct {
	left []wire.Survivor
	err  error
}

func (e *treeAliveError) Error() string { return e.err.Error() }
func (e *treeAliveError) Unwrap() error { return e.err }

// serve reads the start request on the tether, starts the agent (or, for
// a reclaim, only frees the identity) and watches it until teardown. It
// returns the process exit code.
func (g *guardian) serve(term <-chan os.Signal) int {
	g.prepare()
	// No deadline: a guardian may be started ahead of need (Pool) and
	// wait for its request; if its owner dies first, EOF ends the wait.
	rd := newLineReader(g.conn)
	m, err := rd.next()
	read := time.Now()
	if errors.Is(err, io.EOF) {
		return 0 // released unused
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tether guardian: reading the start request: %v\n", err)
		return 1
	}
	switch {
	case m.Type != wire.MsgStart || m.Start == nil:
		g.fail(&wire.Failure{Code: wire.CodeConfig, Message: fmt.Sprintf("first message is %q, want %q", m.Type, wire.MsgStart)})
		return 1
	case !versionOK(m.Version):
		g.fail(&wire.Failure{Code: wire.CodeConfig, Message: fmt.Sprintf("protocol version %d; this guardian speaks %d", m.Version, wire.Version)})
		return 1
	}
	g.req = *m.Start
	if err := g.req.validate(); err != nil {
		g.fail(&wire.Failure{Code: wire.CodeConfig, Message: err.Error()})
		return 1
	}
	g.key = Key(g.req.Identity)
	if g.req.Deadline != nil {
		g.deadline = read.Add(g.req.Deadline.Duration())
	}
	if g.req.KillGrace == 0 {
		g.req.KillGrace = wire.Duration(defaultKillGrace)
	}
	if fl := g.openLog(); fl != nil {
		g.fail(fl)
		return 1
	}
	if fl := g.start(rd); fl != nil {
		g.abort()
		if g.givenUp {
			return 0
		}
		g.logf("not started: %s: %s", fl.Code, fl.Message)
		g.fail(fl)
		return 1
	}
	if g.req.Reclaim {
		g.release()
		g.logf("identity reclaimed")
		g.send(message{Type: wire.MsgStopped, Version: wire.Version, Reason: wire.ReasonReclaimed, Cleanup: &wire.Cleanup{Code: wire.CleanupOK}})
		return 0
	}
	g.logf("started %s as pid %d (%s, private dir %s)", g.req.Argv[0], g.agentPid, g.containment(), g.privateDir)
	g.send(message{Type: wire.MsgReady, Version: wire.Version, Ready: g.ready()})
	// Not at once: dropping pages flushes the TLBs of the other cores,
	// interrupting the owner that is reading this ready and the agent
	// that is starting, which made starts about 0.7 ms slower.
	time.AfterFunc(settleDelay, g.settle)
	return g.watch(rd, term)
}

// prepare does, before the request is read, the part of a start that no
// request decides: a guardian started ahead of need (Pool) does it while
// it waits, and its start then goes without it. It finds this process's
// reference for the owner record, fills encoding/json's caches of the
// protocol's types (building them was half a millisecond of the first
// request's decoding) and takes the OS's part (prepareOS).
func (g *guardian) prepare() {
	g.self = platform.Self()
	warmCodecs()
	g.prepareOS()
}

// ready is the answer to a start that succeeded.
func (g *guardian) ready() *wire.Ready {
	r := &wire.Ready{
		GuardianPID:   os.Getpid(),
		GuardianStart: platform.Self().Start,
		AgentPID:      g.agentPid,
		SessionID:     g.agentPid, // the agent leads its own session or process group
		Containment:   g.containment(),
		PrivateDir:    g.privateDir,
		Since:         g.since,
		TookOver:      g.tookOver,
		Pending:       g.req.Readiness != nil && g.req.Readiness.Ready != nil,
		Agent:         g.req.Agent,
		Fingerprint:   g.req.Fingerprint,
	}
	g.describe(r)
	return r
}

// openLog opens the agent's log and makes each of its files, as the
// writer opens them, the guardian's stdout and stderr too, so nothing the
// guardian prints from now on goes to the owner's pipe.
func (g *guardian) openLog() *wire.Failure {
	policy := logfile.Default()
	if g.req.Logs != nil {
		policy = *g.req.Logs
	}
	var err error
	if g.req.LogPath == "" {
		null, nerr := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if nerr == nil {
			err = redirectOutput(null)
			null.Close()
		}
		g.log, _ = logfile.Open("", policy, nil, nil)
	} else if err = os.MkdirAll(filepath.Dir(g.req.LogPath), 0o700); err == nil {
		g.log, err = logfile.Open(g.req.LogPath, policy, platform.OpenAppendNoFollow, redirectOutput)
	}
	if err != nil {
		return &wire.Failure{Code: wire.CodeSpawn, Path: g.req.LogPath, Message: "opening the log: " + err.Error()}
	}
	return nil
}

func (g *guardian) logf(format string, args ...any) {
	if g.log == nil {
		return
	}
	logline.Printf(g.log, "guardian", format, args...)
}

func (g *guardian) send(m message) {
	g.outMu.Lock()
	defer g.outMu.Unlock()
	if g.conn == nil {
		return // the owner is gone; an adopter hears the state from attached
	}
	_ = g.conn.SetWriteDeadline(time.Now().Add(writeWait))
	// Cleared after the write: an armed deadline would wake the idle
	// guardian later for nothing.
	defer g.conn.SetWriteDeadline(time.Time{})
	if err := writeMessage(g.conn, m); err != nil {
		g.logf("telling the owner %q: %v", m.Type, err)
	}
}

func (g *guardian) fail(f *wire.Failure) {
	g.send(message{Type: wire.MsgFailed, Version: wire.Version, Failure: f})
}

// drainOutput writes the last of the agent's output, once its tree is
// dead, before the identity is freed: a next guardian of the identity
// writes the same log.
func (g *guardian) drainOutput() {
	if !g.output.drain(drainWait) {
		g.logf("the agent's output was still open %v after its tree ended (a process outside the tree holds it); closed", drainWait)
	}
	if lost, err := g.log.Lost(); lost > 0 {
		g.logf("%d bytes of the agent's output could not be written to its log (last error: %v)", lost, err)
	}
}

// removeOldDir removes the private directory an earlier tree of prev's
// identity left. It must look like one tether made for that identity.
func (g *guardian) removeOldDir(prev *record) {
	d := prev.PrivateDir
	if d == "" || !filepath.IsAbs(d) || !strings.HasPrefix(filepath.Base(d), Key(prev.Identity)+"-") {
		return
	}
	if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
		if err := platform.RemoveAll(d); err != nil {
			g.logf("removing the private directory %s left by an earlier tree: %v", d, err)
		}
	}
}

// agentEnv returns env with the keys of set replaced (compared as the
// platform compares them: exactly on Unix, case-insensitively on
// Windows). glibc's getenv returns the first match, so old values are
// dropped, not shadowed.
func agentEnv(env []string, set map[string]string) []string {
	replaced := make(map[string]bool, len(set))
	for k := range set {
		replaced[envKey(k)] = true
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !replaced[envKey(k)] {
			out = append(out, kv)
		}
	}
	keys := slices.Sorted(maps.Keys(set))
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// agentCommand is what every platform needs to start the agent.
type agentCommand struct {
	path, dir string
	argv      []string
	env       []string
	stdin     *os.File // the null device; closed by the caller once the agent runs
	// stdout and stderr are the write ends of the output's pipes.
	stdout, stderr *os.File
}

// command resolves the agent's command in its working directory (the
// requested one, which must be a directory, or the private directory) and
// builds its environment: the request's, with the private directory as
// its temporary directory and its identity named.
func (g *guardian) command() (*agentCommand, *wire.Failure) {
	set := map[string]string{
		"TMPDIR": g.privateDir, "TMP": g.privateDir, "TEMP": g.privateDir,
		"TETHER_PRIVATE_DIR": g.privateDir, "TETHER_IDENTITY": g.req.Identity,
	}
	if fl := g.prepareReadiness(set); fl != nil {
		return nil, fl
	}
	env := platformEnv(agentEnv(g.req.Env, set))
	dir := g.req.Dir
	if dir == "" {
		dir = g.privateDir
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		msg := "working directory is not a directory"
		if err != nil {
			msg = "working directory: " + err.Error()
		}
		return nil, &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseBadDir, Path: dir, Message: msg}
	}
	path, fl := resolveCommand(g.req.Argv[0], dir, env)
	if fl != nil {
		return nil, fl
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, &wire.Failure{Code: wire.CodeInternal, Message: err.Error()}
	}
	out, err := newOutput()
	if err != nil {
		null.Close()
		return nil, &wire.Failure{Code: wire.CodeInternal, Message: "making the output pipes: " + err.Error()}
	}
	g.output = out
	c := &agentCommand{path: path, argv: g.req.Argv, dir: dir, env: env, stdin: null, stdout: out.outW, stderr: out.errW}
	if g.readiness != nil && g.readiness.spec.Watchdog > 0 {
		c.withWatchdogPID()
	}
	return c, nil
}

// abort undoes a failed start: whatever it made, it removes, so a failed
// start leaves no lock, no directory and no process behind.
func (g *guardian) abort() {
	g.readiness.close()
	if g.agentPid > 0 {
		if _, err := g.stopTree(g.req.StopTimeout.Duration()); err != nil {
			g.logf("stopping the agent after a failed start: %v", err)
		}
	}
	g.drainOutput()
	if g.privateDir != "" {
		_ = platform.RemoveAll(g.privateDir)
	}
	_ = g.removeContainment()
	g.release()
}

// release clears the owner record and releases the lock, in that order,
// under the record lock, so no contender ever reads a record of a holder
// that already let go.
func (g *guardian) release() {
	if g.rec == nil {
		return
	}
	if g.locked {
		busy := g.rec.lock(5*time.Second) != nil
		if err := g.rec.write(nil); err != nil {
			g.logf("clearing the owner record: %v", err)
		}
		if err := g.unlockOwnership(); err != nil {
			g.logf("releasing the ownership lock: %v", err)
		}
		g.locked = false
		if !busy {
			g.rec.unlock()
		}
		g.held.end()
	}
	g.closeOwnership()
	g.rec.close()
	g.rec = nil
}

// watch waits for the one thing that ends the agent's life: a stop
// request, the owner's death (EOF on the tether, or on Windows the owner's
// process handle), a terminating signal, or the agent's own exit. It
// blocks with no timer: an idle guardian does not wake up. A stopped and
// continued guardian, or an interrupted read, changes nothing here; only
// EOF or a read error ends the wait. With survive_crash, the owner's death
// starts a wait for an adopter instead (see orphaned); an attach on the
// tether is a new owner taking it over (see attach).
func (g *guardian) watch(rd *lineReader, term <-chan os.Signal) int {
	tr := readTether(rd, g.ownerEOF)
	timeout := g.req.StopTimeout.Duration()
	var reason wire.StopReason
	var exit *wire.Exit
	var detail string
	var seen time.Time // when the end was seen, if not at the loop's end
	rw := g.readyWatch()
	defer rw.stop()
	var orphan *orphanWait
	defer func() { orphan.close() }()
	fence := g.fenceTimer()
	defer fence.stop()
	for reason == "" {
		select {
		case <-fence.c:
			reason = wire.ReasonDeadline
			detail = fmt.Sprintf("no renewal of the identity's lease came in time: the tree must be dead within %v", time.Until(g.deadline).Round(time.Millisecond))
		case ev := <-rw.events:
			reason, detail = rw.handle(ev)
		case <-rw.startC:
			reason, detail = wire.ReasonNotReady, rw.notReady()
		case <-rw.dogC:
			reason, detail = wire.ReasonWatchdog, fmt.Sprintf("no WATCHDOG=1 for %v", rw.dog)
		case m := <-tr.msgs:
			switch {
			case m.Type == wire.MsgStop:
				reason = wire.ReasonStopRequested
				if m.Timeout != nil && *m.Timeout > 0 {
					timeout = m.Timeout.Duration()
				}
			case m.Type == wire.MsgAttach:
				g.attach(m, rw)
			case m.Type == wire.MsgDeadline && m.Deadline != nil:
				g.renew(m.Deadline.Duration(), fence)
			default:
				g.logf("ignoring unexpected %q message", m.Type)
			}
		case e := <-tr.errc:
			if !errors.Is(e.err, io.EOF) {
				g.logf("tether read failed: %v", e.err)
			}
			tr = &tetherReader{}
			if orphan = g.orphaned(rw); orphan == nil {
				reason, seen = wire.ReasonOwnerLost, e.at
			}
		case <-g.ownerGone():
			g.logf("owner process exited")
			tr = &tetherReader{}
			if orphan = g.orphaned(rw); orphan == nil {
				reason = wire.ReasonOwnerLost
			}
		case a := <-orphan.found():
			orphan.close()
			orphan = nil
			tr = g.adopted(a, rw)
		case <-orphan.expired():
			reason, detail = wire.ReasonOwnerLost, fmt.Sprintf("not adopted within %v of the owner's death", g.req.SurviveCrash.Duration())
		case s := <-term:
			reason = wire.ReasonSignal
			g.logf("received %v", s)
		case e := <-g.agentExit:
			exit = &e
			g.agentExit = nil
			reason = wire.ReasonAgentExited
			g.logf("agent pid %d exited: %s", g.agentPid, e)
			g.send(message{Type: wire.MsgExited, Exit: exit})
		}
	}
	if seen.IsZero() {
		seen = time.Now()
	}
	if detail != "" {
		g.logf("%s: %s", reason, detail)
	}
	if !g.deadline.IsZero() {
		// Whatever began it, the SIGKILL comes before the deadline:
		// no renewal counts once the teardown has begun.
		timeout = max(min(timeout, g.deadline.Sub(seen)-wire.KillMargin), 0)
	}
	g.readiness.close()
	return g.teardown(reason, seen, timeout, exit, detail)
}

// readEnd is the end of the tether: the read's error, and when it came.
type readEnd struct {
	err error
	at  time.Time
}

// tetherReader delivers what the owner sends on one tether; its channels
// are nil while there is no tether.
type tetherReader struct {
	msgs chan message
	errc chan readEnd
}

// readTether reads the tether rd until it ends. The stop timeout counts
// from the owner's death, as near to it as can be told: the EOF, taken
// before anything else is done, or as eof tells it (see
// osSteps.ownerEOF).
func readTether(rd *lineReader, eof func(at time.Time) time.Time) *tetherReader {
	tr := &tetherReader{msgs: make(chan message, 4), errc: make(chan readEnd, 1)}
	go func() {
		for {
			m, err := rd.next()
			if err != nil {
				at := time.Now()
				if errors.Is(err, io.EOF) {
					at = eof(at)
				}
				tr.errc <- readEnd{err: err, at: at}
				return
			}
			tr.msgs <- m
		}
	}()
	return tr
}

// current is the agent as it is now, for a new owner.
func (g *guardian) current(rw *readyWatch) *wire.Ready {
	r := g.ready()
	r.Pending = !rw.up
	return r
}

// attach answers a new owner that took the tether over (an upgrade of
// the owner): from now on its process is the one watched.
func (g *guardian) attach(m message, rw *readyWatch) {
	if m.Owner != nil {
		if err := g.watchOwner(m.Owner); err != nil {
			g.logf("watching the new owner, pid %d: %v (the tether alone will tell its death)", m.Owner.Pid, err)
		}
		g.logf("the tether has a new owner, pid %d (protocol version %d)", m.Owner.Pid, m.Version)
	}
	g.send(message{Type: wire.MsgAttached, Version: wire.Version, Ready: g.current(rw), Detail: rw.status, MainPID: rw.mainPID})
}

// teardown stops the tree, removes the private directory and the
// containment, and only then releases the lock. The stop timeout counts
// from begin, when the end of the agent's life was seen. A tree that
// cannot be confirmed empty keeps the lock and is retried with backoff,
// reported each time.
func (g *guardian) teardown(reason wire.StopReason, begin time.Time, timeout time.Duration, exit *wire.Exit, detail string) int {
	g.logf("stopping (%s), stop timeout %v", reason, timeout)
	// After the owner's death this guardian waits for its siblings
	// (see siblings); otherwise nobody is waited for.
	var sib *siblingCount
	if reason == wire.ReasonOwnerLost {
		sib = g.held
	}
	rep, err := g.stopTree(max(timeout-time.Since(begin), 0))
	backoff := time.Second
	for err != nil {
		c := &wire.Cleanup{Code: wire.CleanupTreeAlive, Message: err.Error(), Terminated: rep.Terminated, Killed: rep.Killed, Forced: rep.Forced, Elapsed: wire.Duration(time.Since(begin))}
		var alive *treeAliveError
		if errors.As(err, &alive) {
			c.Survivors = alive.left
			for _, p := range alive.left {
				c.Left = append(c.Left, p.PID)
			}
		} else {
			c.Code = wire.CleanupInternal
		}
		retry := wire.Duration(backoff)
		g.logf("cleanup failed, lock kept, retrying in %v: %v", backoff, err)
		g.recordCleanup(c)
		g.send(message{Type: wire.MsgCleanupFailed, Cleanup: c, Retry: &retry, Reason: reason})
		// The retries are nobody else's wait.
		g.held.end()
		g.waitLeft(err, backoff)
		backoff = min(2*backoff, retryMax)
		var more stopReport
		more, err = g.stopTree(0)
		rep.add(more)
	}
	g.afterStop()
	g.drainOutput()
	if exit == nil {
		select {
		case e := <-g.agentExit:
			exit = &e
		default:
		}
	}
	c := &wire.Cleanup{Code: wire.CleanupOK, Terminated: rep.Terminated, Killed: rep.Killed, Forced: rep.Forced}
	if err := platform.RemoveAll(g.privateDir); err != nil {
		c.Code, c.Message = wire.CleanupPrivateDir, err.Error()
	}
	// The tree is gone and its directory too: the identity is free.
	// What is left (the containment, empty now, and this process's
	// own end) is nobody's wait; after the owner's death it waits for
	// the other guardians of that owner, which may not all have killed
	// their trees yet (I2). The release ends this guardian's count.
	g.release()
	if !sib.wait() {
		g.logf("other guardians of the owner still tearing down after %v; going on", siblingWait)
	}
	if err := g.removeContainment(); err != nil && c.Code == wire.CleanupOK {
		c.Code, c.Message = containmentCleanupCode, err.Error()
	}
	c.Elapsed = wire.Duration(time.Since(begin))
	if c.Code == wire.CleanupOK {
		g.logf("stopped (%s) in %v: %d terminated, %d killed", reason, c.Elapsed.Duration(), c.Terminated, c.Killed)
	} else {
		g.logf("stopped (%s) in %v with a cleanup error: %s: %s", reason, c.Elapsed.Duration(), c.Code, c.Message)
	}
	g.send(message{Type: wire.MsgStopped, Cleanup: c, Reason: reason, Exit: exit, Detail: detail})
	sib.leave()
	g.reclaimMu.Lock()
	g.reclaimsDone = true
	g.reclaimMu.Unlock()
	g.reclaims.Wait()
	return 0
}

// siblings counts, for the guardians of one owner, those that hold an
// identity. When hundreds of them wake at the same stop deadline after
// the owner's death, on few cores, a guardian that has freed its identity
// would spend on the rest of its end (its containment's removal, its
// exit: the kernel's teardown of its memory) the CPU that the others
// still need to kill their trees and free theirs (I2). So each is counted
// (Begin) from when it takes its identity's lock until it lets it go
// (End), and after the owner's death one that has freed its identity
// waits until no sibling is counted (WaitEnded, at most siblingWait); the
// waiters go one after the other: each, as it leaves, lets the next go
// (Leave). Counted from the start, not from the death, a sibling that
// sees the death later than this one (scheduled late on a busy machine)
// is still waited for.
type siblings interface {
	Begin()
	End()
	WaitEnded(limit time.Duration) bool
	Leave()
}

// siblingWait bounds how long a guardian that has freed its identity
// waits for the other guardians of its dead owner: one of them may have
// a longer stop timeout, a tree it cannot kill, or have died in its
// teardown.
const siblingWait = time.Second

// siblingCount is one guardian's part in its siblings' count; nil when
// it takes none (there is no count).
type siblingCount struct {
	s       siblings
	counted bool
}

// countSibling counts the guardian among s; with none, it takes no part.
func countSibling(s siblings) *siblingCount {
	if s == nil {
		return nil
	}
	s.Begin()
	return &siblingCount{s: s, counted: true}
}

// end ends the count, once.
func (c *siblingCount) end() {
	if c != nil && c.counted {
		c.s.End()
		c.counted = false
	}
}

// wait waits for the siblings still counted, and reports whether none is.
func (c *siblingCount) wait() bool { return c == nil || c.s.WaitEnded(siblingWait) }

// leave lets the next waiting sibling go.
func (c *siblingCount) leave() {
	if c != nil {
		c.s.Leave()
	}
}

// recordCleanup notes in the owner record that the teardown could not
// confirm the tree dead, so that whoever reads the record (a service
// relaunched after this guardian's owner died) learns why the identity
// is still held, until the release clears the record.
func (g *guardian) recordCleanup(c *wire.Cleanup) {
	if g.rec == nil || g.own == nil {
		return
	}
	if err := g.rec.lock(recordWait); err != nil {
		g.logf("noting the failed cleanup in the owner record: %v", err)
		return
	}
	defer g.rec.unlock()
	g.own.Cleanup = c
	if err := g.rec.write(g.own); err != nil {
		g.logf("noting the failed cleanup in the owner record: %v", err)
	}
}
