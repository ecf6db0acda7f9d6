//go:build unix

package guardian

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether-dev/tether/platform"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/wire"
	"golang.org/x/sys/unix"
)

// tetherFD is the descriptor the owner passes the guardian's end of the
// socket pair on.
const tetherFD = 3

const notByHand = `tether guardian: this is tether's internal lifetime owner for one agent.
The tether service starts it with a socket on descriptor 3 and sends it the
agent to run; it is not meant to be run by hand. To run an agent, use
"tether start ID".
`

// containmentCleanupCode is the cleanup code of a containment that could
// not be removed: the agent's cgroup.
const containmentCleanupCode = wire.CleanupCgroup

// osGuardian is the Unix half of a guardian: the flock, the reaper, the
// session and the cgroup.
type osGuardian struct {
	reaper    *punix.Reaper
	subreaper bool
	lock      *os.File
	cgroup    *punix.Cgroup
	scope     string // the transient scope unit the cgroup is in, if any
	tree      *punix.Tree
	// cgroupDir is the guardian's own cgroup, below which the agent's
	// is made, found by prepareOS; empty, and cgroupErr says why, when
	// there is none.
	cgroupDir string
	cgroupErr error
	// clock is shared with the owner's other guardians; nil without.
	clock *punix.SharedClock
}

// The guardians of one owner share the moment its death was first seen.
//
// Every guardian counts its stop timeout from its owner's death (I2), and
// it sees that death as the EOF of its tether. When an owner with
// hundreds of agents dies, its guardians wake together, on few cores, and
// some see the EOF a good while after the first: counted from there, the
// last trees would be killed that much past the stop timeout. So the
// owner hands each guardian, as descriptor 4, the same shared clock (a
// memfd on Linux, see punix.SharedClock), and at the EOF each guardian
// notes in it the time it saw unless an earlier one is there already, and
// counts from the earliest.
//
// An earlier time that is more than deathWindow before a guardian's own
// EOF belongs to another EOF (a tether its owner closed on purpose, long
// before): that guardian counts from its own time, and notes it.
const (
	// deathClockFD is the descriptor the clock arrives on.
	deathClockFD = 4
	// deathClockName names the memfd; a descriptor 4 that is not one is
	// not used.
	deathClockName = "tether-owner-death"
	// deathWindow bounds how much later than the first a guardian may
	// see the same death.
	deathWindow = time.Second
)

// ownerEOF counts from the first of the owner's guardians to see its
// death, then lets the others that woke with this one take their time
// before this one starts its teardown.
// Each also takes its part in reclaiming the trees of the guardians that
// died with the owner (see reclaimSiblings).
func (g *guardian) ownerEOF(at time.Time) time.Time {
	at = g.clock.Earliest(at, deathWindow)
	g.reclaimSiblings(at)
	punix.Yield()
	return at
}

// Main runs the guardian process; args are the arguments after
// "guardian" (or after tether-guardian). It returns the process exit
// code. With the one argument protocolArg it only says which protocol
// version it speaks.
func Main(args []string) int {
	if len(args) == 1 && args[0] == protocolArg {
		return answerProtocol(os.Stdout)
	}
	if len(args) > 0 || !tetherPresent() {
		fmt.Fprint(os.Stderr, notByHand)
		return 2
	}
	return run()
}

func tetherPresent() bool {
	var st unix.Stat_t
	if err := unix.Fstat(tetherFD, &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFSOCK
}

func run() int {
	// Signals meant for someone else must not kill or stop the guardian:
	// its death would orphan the tree with the lock still held. They are
	// caught and dropped (a channel nobody reads: Notify never blocks),
	// not ignored: an ignored signal stays ignored across exec, and the
	// agent starts with every signal at its default action, SIGPIPE
	// ending a writer whose reader is gone. Caught, SIGPIPE also makes a
	// write to a broken standard descriptor fail with EPIPE, as ignored
	// did. SIGPROF is the runtime's own, and harmless.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGVTALRM)
	// The signals the runtime never touches are put at their default
	// too, in case whoever started the service left them ignored: the
	// agent inherits none ignored.
	if err := punix.DefaultUnmanagedSignals(); err != nil {
		fmt.Fprintf(os.Stderr, "tether guardian: %v\n", err)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	// The agent must never inherit the tether (I6).
	unix.CloseOnExec(tetherFD)
	conn, err := punix.Pollable(tetherFD, "tether")
	if err != nil {
		fmt.Fprintf(os.Stderr, "tether guardian: descriptor %d: %v\n", tetherFD, err)
		return 1
	}
	g := &guardian{conn: conn}
	g.clock = punix.OpenSharedClock(deathClockFD, deathClockName)

	g.subreaper, _ = punix.BecomeSubreaper()
	g.reaper = punix.NewReaper()
	return g.serve(term)
}

func redirectOutput(f *os.File) error {
	for _, fd := range []int{1, 2} {
		if err := punix.DupOnto(int(f.Fd()), fd); err != nil {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// settle runs once the agent is ready: from here the guardian mostly
// sleeps, so it lets go of the pages that start-up touched (see
// ReleaseExecutablePages).
func (g *guardian) settle() { _ = punix.ReleaseExecutablePages() }

// siblings is the count in the owner's shared clock (see
// punix.SharedClock.Begin); without a clock, or with one of an older
// owner that has no count, there is nobody to wait for.
func (g *guardian) siblings() siblings { return g.clock }

// endDead ends the part in the count of rec's guardian, found dead with
// its record still written: it died holding its identity, before the
// release that would have ended it, and whoever finds it so clears or
// replaces the record, so each dead holder is ended once. Only a holder
// of this guardian's own clock is ended here; another clock's count is
// no one's wait any more than its owner is alive.
func (g *guardian) endDead(rec *record) {
	if rec != nil && rec.Clock != 0 && rec.Clock == g.clock.ID() {
		g.clock.End()
	}
}

// prepareOS finds the guardian's own cgroup v2 (two files of /proc),
// while the guardian waits for its request.
func (g *guardian) prepareOS() { g.cgroupDir, g.cgroupErr = punix.OwnCgroupDir() }

// ownerGone is nil: on Unix the tether's EOF is the one sign of the
// owner's death.
func (g *guardian) ownerGone() <-chan struct{} { return nil }

// watchOwner does nothing: on Unix the tether alone says the owner died.
func (g *guardian) watchOwner(*procRef) error { return nil }

func (g *guardian) containment() wire.Containment {
	switch {
	case g.cgroup == nil:
		return wire.ContainmentSession
	case g.scope != "":
		return wire.ContainmentScope
	}
	return wire.ContainmentCgroup
}

func (g *guardian) describe(r *wire.Ready) {
	r.Cgroup = cgroupPath(g.cgroup)
	r.Scope = g.scope
	r.Subreaper = g.subreaper
	r.LockPath = g.lock.Name()
}

func cgroupPath(c *punix.Cgroup) string {
	if c == nil {
		return ""
	}
	return c.Path
}

// acquire takes the flock on <key>.lock. A held lock is contention, or
// the tree of a dead guardian that holds it still: see takeOver.
func (g *guardian) acquire(prev *record) *wire.Failure {
	lockPath := filepath.Join(g.req.LockDir, g.key+".lock")
	var err error
	if g.lock, err = platform.OpenLockFile(lockPath); err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: lockPath, Message: err.Error()}
	}
	err = platform.TryLock(g.lock)
	if errors.Is(err, platform.ErrLocked) {
		return g.takeOver(prev, lockPath)
	}
	if err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: lockPath, Message: err.Error()}
	}
	return nil
}

// clearEarlier: the lock was free, but an earlier tree may live on after
// closing its inherited lock descriptor: stop it before starting another.
func (g *guardian) clearEarlier(prev *record) *wire.Failure {
	switch {
	case prev == nil:
		return nil
	case prev.Agent.Pid > 0 || prev.Cgroup != "":
		return g.stopLeftover(prev)
	}
	g.endDead(prev) // it died before its agent was started
	return nil
}

// takeOver handles a held lock: a live recorded guardian means contention;
// a dead one means its tree was abandoned, so stop that tree and take the
// lock once it is free.
func (g *guardian) takeOver(prev *record, lockPath string) *wire.Failure {
	if prev != nil && prev.Guardian.Pid > 0 && platform.Alive(prev.Guardian) {
		return &wire.Failure{Code: wire.CodeContention, Message: "identity " + quote(g.req.Identity) + " is held by " + prev.holder().String(), Holder: prev.holder()}
	}
	tree := abandonedTree(prev, lockPath)
	if prev == nil && len(tree.Extra) == 0 {
		h := &wire.Holder{Identity: g.req.Identity, Unknown: true}
		return &wire.Failure{Code: wire.CodeContention, Message: "identity " + quote(g.req.Identity) + " is locked but no record says by whom", Holder: h}
	}
	g.logf("guardian of %s is gone but its tree holds the lock; stopping that tree", prev.holder())
	if _, err := tree.Stop(g.req.StopTimeout.Duration(), g.req.KillGrace.Duration()); err != nil {
		return &wire.Failure{Code: wire.CodeContention, Message: "the abandoned tree of " + prev.holder().String() + " could not be stopped: " + err.Error(), Holder: prev.holder()}
	}
	switch err := lockOnceFree(g.lock, g.req.KillGrace.Duration()); {
	case errors.Is(err, platform.ErrLocked):
		return &wire.Failure{Code: wire.CodeContention, Message: "the abandoned tree of " + prev.holder().String() + " was stopped but the lock is still held", Holder: prev.holder()}
	case err != nil:
		return &wire.Failure{Code: wire.CodeLock, Path: lockPath, Message: err.Error()}
	}
	g.tookOver = prev.holder()
	if prev != nil {
		g.removeOld(prev)
		g.endDead(prev)
	}
	return nil
}

// abandonedTree is the tree a dead guardian left: the leader and the
// cgroup its record names (prev may be nil), and every other process
// that holds its identity's lock at lockPath (members that left the
// session keep the inherited descriptor; no lockPath: none looked for).
func abandonedTree(prev *record, lockPath string) *punix.Tree {
	tree := &punix.Tree{}
	var holders []punix.Proc
	if lockPath != "" {
		holders, _ = punix.FileHolders(lockPath)
	}
	for _, h := range holders {
		if h.Pid != os.Getpid() {
			tree.Extra = append(tree.Extra, h.Ref())
		}
	}
	if prev != nil {
		tree.Leader = prev.Agent
		if prev.Cgroup != "" {
			tree.Cgroup, _ = punix.OpenCgroup(prev.Cgroup)
		}
	}
	return tree
}

// lockOnceFree takes lock, waiting up to grace for the last holders of
// a stopped tree to let it go (the kernel closes a killed process's
// descriptors as it exits); platform.ErrLocked when it is still held.
func lockOnceFree(lock *os.File, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		err := platform.TryLock(lock)
		if !errors.Is(err, platform.ErrLocked) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// stopLeftover stops what is left of a recorded earlier tree.
func (g *guardian) stopLeftover(prev *record) *wire.Failure {
	tree := &punix.Tree{Leader: prev.Agent}
	if prev.Cgroup != "" {
		tree.Cgroup, _ = punix.OpenCgroup(prev.Cgroup)
	}
	ms, err := tree.Members()
	if err != nil {
		return &wire.Failure{Code: wire.CodeInternal, Message: "scanning for an earlier tree: " + err.Error()}
	}
	if len(ms) > 0 {
		g.logf("an earlier tree of this identity (session %d) still has %d process(es); stopping them", prev.Agent.Pid, len(ms))
		if _, err := tree.Stop(g.req.StopTimeout.Duration(), g.req.KillGrace.Duration()); err != nil {
			return &wire.Failure{Code: wire.CodeContention, Message: "an earlier tree of this identity could not be stopped: " + err.Error(), Holder: prev.holder()}
		}
	}
	g.removeOld(prev)
	g.endDead(prev)
	return nil
}

// removeOld removes the private directory and cgroup a dead tree left.
func (g *guardian) removeOld(prev *record) {
	g.removeOldDir(prev)
	if prev.Cgroup != "" {
		if cg, err := punix.OpenCgroup(prev.Cgroup); err == nil {
			_ = cg.Remove()
		}
	}
}

// cgroupPrefix starts the name of every agent's cgroup; the rest is the
// name of its private directory.
const cgroupPrefix = "tether-"

// CgroupKey returns the key (see Key) of the identity that an agent's
// cgroup named name was made for, and false for a name no guardian makes.
func CgroupKey(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, cgroupPrefix)
	if !ok {
		return "", false
	}
	return PrivateDirKey(rest)
}

// contain creates the agent's cgroup on the strongest rung it can get
// (see cgroupOrScope); without one the agent's session is its
// containment.
func (g *guardian) contain(name string, self *record) *wire.Failure {
	self.Clock = g.clock.ID()
	if g.cgroup, g.scope = g.cgroupOrScope(cgroupPrefix + name); g.cgroup != nil {
		self.Cgroup = g.cgroup.Path
	}
	return nil
}

// spawn starts the agent in its own session (and cgroup), with the lock
// descriptor inherited so the lock lives as long as any process of the
// tree keeps it.
func (g *guardian) spawn(c *agentCommand) (procRef, <-chan wire.Exit, *wire.Failure) {
	spec := punix.SpawnSpec{
		Path: c.path, Argv: c.argv, Dir: c.dir, Env: c.env,
		Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr,
		Extra:  g.inherited(),
		Cgroup: g.cgroup,
	}
	pid, exit, err := g.reaper.Start(func() (int, error) { return punix.StartSession(spec) })
	if err != nil && g.cgroup != nil {
		// A cgroup we could create but not spawn into (delegation
		// rules differ between managers): fall back to the session.
		g.logf("starting in cgroup %s failed (%v); using session containment", g.cgroup.Path, err)
		_ = g.cgroup.Remove()
		g.cgroup = nil
		spec.Cgroup = nil
		pid, exit, err = g.reaper.Start(func() (int, error) { return punix.StartSession(spec) })
	}
	if err != nil {
		return procRef{}, nil, &wire.Failure{Code: wire.CodeSpawn, Cause: wire.CauseExec, Path: c.path, Message: err.Error()}
	}
	g.cgroup.CloseSpawnFD()
	agent := punix.Ref{Pid: pid}
	if p, err := punix.Stat(pid); err == nil {
		agent = p.Ref()
	}
	exits := make(chan wire.Exit, 1)
	go func() {
		if st, ok := <-exit; ok {
			exits <- toExit(st)
		}
	}()
	g.tree = &punix.Tree{Leader: agent, Root: os.Getpid(), RootSubreaper: g.subreaper, Cgroup: g.cgroup, Reaper: g.reaper}
	return agent, exits, nil
}

// inherited lists the descriptors the agent gets from 3 on: the lock
// (which keeps the identity held while any process of the tree lives)
// and, for ready: {fd: N}, the notification pipe at N. A gap between
// them is a closed descriptor.
func (g *guardian) inherited() []*os.File {
	r := g.readiness
	if r == nil || r.fdWrite == nil {
		return []*os.File{g.lock}
	}
	n := r.spec.Ready.FD - punix.FirstExtraFD
	files := make([]*os.File, max(n+1, 2))
	files[n] = r.fdWrite
	for i := range files {
		if files[i] == nil {
			files[i] = g.lock
			break
		}
	}
	return files
}

func toExit(st punix.ExitStatus) wire.Exit {
	if st.Signal != 0 {
		return wire.Exit{Code: -1, Signal: st.Signal.String()}
	}
	return wire.Exit{Code: st.Code}
}

// stopTree stops the tree: SIGTERM, timeout, SIGKILL, the kill grace.
func (g *guardian) stopTree(timeout time.Duration) (stopReport, error) {
	rep, err := g.tree.Stop(timeout, g.req.KillGrace.Duration())
	out := treeReport(rep)
	// A scan of /proc is not atomic: a process reparented to the
	// guardian in the middle of it can be missed. The guardian is a
	// subreaper, so its having no children at all is the proof that no
	// descendant is left; a live child means a member was missed.
	for i := 0; err == nil && g.subreaper && g.reaper.ReapNow() && i < 20; i++ {
		rep, err = g.tree.Stop(timeout, g.req.KillGrace.Duration())
		out.add(treeReport(rep))
	}
	var alive *punix.TreeAliveError
	if errors.As(err, &alive) {
		left := make([]wire.Survivor, 0, len(alive.Left))
		for _, p := range alive.Left {
			left = append(left, wire.Survivor{PID: p.Pid, State: string(p.State)})
		}
		return out, &treeAliveError{left: left, err: err}
	}
	return out, err
}

// waitLeft waits, between two cleanup retries, until a process the
// failed stop (err) left has died, or for at most d: a stuck process
// that dies at last (thawed, or out of an uninterruptible sleep) is
// seen at once through its pidfd, and the retry that confirms the tree
// empty follows, not at the end of the backoff (D205).
func (g *guardian) waitLeft(err error, d time.Duration) {
	var alive *punix.TreeAliveError
	if !errors.As(err, &alive) || len(alive.Left) == 0 {
		time.Sleep(d)
		return
	}
	hs := make([]*punix.Handle, 0, len(alive.Left))
	defer func() {
		for _, h := range hs {
			h.Close()
		}
	}()
	for _, p := range alive.Left {
		h, herr := punix.OpenHandle(p.Ref())
		if errors.Is(herr, punix.ErrNoProcess) {
			return // gone already: retry now
		}
		if herr != nil {
			g.logf("watching pid %d for its end: %v (retrying in %v)", p.Pid, herr, d)
			time.Sleep(d)
			return
		}
		hs = append(hs, h)
	}
	if _, werr := punix.WaitExit(hs, d); werr != nil {
		g.logf("watching what is left for its end: %v", werr)
	}
}

func treeReport(r punix.StopReport) stopReport {
	return stopReport{Terminated: r.Terminated, Killed: r.Killed, Forced: r.Forced}
}

// afterStop reaps the members that died as zombies reparented here before
// the guardian exits, or they would fall to a parent that may not reap.
func (g *guardian) afterStop() {
	if !g.reaper.ReapAll(g.req.KillGrace.Duration()) {
		g.logf("children still unreaped after %v", g.req.KillGrace.Duration())
	}
}

func (g *guardian) removeContainment() error {
	if g.cgroup == nil {
		return nil
	}
	return g.cgroup.Remove()
}

func (g *guardian) unlockOwnership() error { return platform.Unlock(g.lock) }

func (g *guardian) closeOwnership() {
	if g.lock != nil {
		g.lock.Close()
	}
}

// withWatchdogPID starts the agent through sh, which sets WATCHDOG_PID
// to its own pid and then becomes the agent with exec: the pid is the
// agent's, and sd_watchdog_enabled(3) in the agent finds it its own.
// Only agents with a watchdog pay for the extra exec.
func (c *agentCommand) withWatchdogPID() {
	argv := append([]string{"sh", "-c", `WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$@"`, c.argv[0], c.path}, c.argv[1:]...)
	c.path, c.argv = "/bin/sh", argv
}

// platformEnv adds nothing on Unix.
func platformEnv(env []string) []string { return env }
