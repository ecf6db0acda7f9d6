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

	punix "github.com/tether-dev/tether/platform/unix"
	sys "golang.org/x/sys/unix"
)

// tetherFD is the descriptor the owner passes the guardian's end of the
// socket pair on.
const tetherFD = 3

const notByHand = `tether guardian: this is tether's internal lifetime owner for one agent.
The tether service starts it with a socket on descriptor 3 and sends it the
agent to run; it is not meant to be run by hand. To run an agent, use
"tether start ID".
`

// procRef names a process in the owner record.
type procRef = punix.Ref

// containmentCleanupCode is the cleanup code of a containment that could
// not be removed: the agent's cgroup.
const containmentCleanupCode = CleanupCgroup

// osGuardian is the Unix half of a guardian: the flock, the reaper, the
// session and the cgroup.
type osGuardian struct {
	reaper    *punix.Reaper
	subreaper bool
	lock      *os.File
	cgroup    *punix.Cgroup
	scope     string // the transient scope unit the cgroup is in, if any
	tree      *punix.Tree
	agent     punix.Ref
}

// Main runs the guardian process; args are the arguments after
// "guardian". It returns the process exit code.
func Main(args []string) int {
	if len(args) > 0 || !tetherPresent() {
		fmt.Fprint(os.Stderr, notByHand)
		return 2
	}
	return run()
}

func tetherPresent() bool {
	var st sys.Stat_t
	if err := sys.Fstat(tetherFD, &st); err != nil {
		return false
	}
	return st.Mode&sys.S_IFMT == sys.S_IFSOCK
}

func run() int {
	// Signals meant for someone else must not kill the guardian: its
	// death would orphan the tree with the lock still held.
	signal.Ignore(syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGVTALRM, syscall.SIGPROF)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	// The agent must never inherit the tether (I6).
	sys.CloseOnExec(tetherFD)
	conn, err := punix.Pollable(tetherFD, "tether")
	if err != nil {
		fmt.Fprintf(os.Stderr, "tether guardian: descriptor %d: %v\n", tetherFD, err)
		return 1
	}
	g := &guardian{conn: conn}
	defer conn.Close()

	g.subreaper, _ = punix.BecomeSubreaper()
	g.reaper = punix.NewReaper()
	return g.serve(term)
}

func openAppendNoFollow(path string) (*os.File, error) { return punix.OpenAppendNoFollow(path) }

func redirectOutput(f *os.File) error {
	for _, fd := range []int{1, 2} {
		if err := punix.DupOnto(int(f.Fd()), fd); err != nil {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// The owner record's lock.
var (
	openLockFile = punix.OpenLockFile
	lockFile     = punix.TryLock
	unlockFile   = punix.Unlock
	errFileBusy  = punix.ErrLocked
)

func removeAll(path string) error { return os.RemoveAll(path) }

// settle runs once the agent is ready: from here the guardian mostly
// sleeps, so it lets go of the pages that start-up touched (see
// ReleaseExecutablePages).
func (g *guardian) settle() { _ = punix.ReleaseExecutablePages() }

// ownerGone is nil: on Unix the tether's EOF is the one sign of the
// owner's death.
func (g *guardian) ownerGone() <-chan struct{} { return nil }

func (g *guardian) containment() Containment {
	switch {
	case g.cgroup == nil:
		return ContainmentSession
	case g.scope != "":
		return ContainmentScope
	}
	return ContainmentCgroup
}

func (g *guardian) ready() *Ready {
	return &Ready{
		GuardianPID: os.Getpid(),
		AgentPID:    g.agent.Pid,
		SessionID:   g.agent.Pid,
		Containment: g.containment(),
		Cgroup:      cgroupPath(g.cgroup),
		Scope:       g.scope,
		Subreaper:   g.subreaper,
		PrivateDir:  g.privateDir,
		LockPath:    g.lock.Name(),
		Since:       g.since,
		TookOver:    g.tookOver,
	}
}

func cgroupPath(c *punix.Cgroup) string {
	if c == nil {
		return ""
	}
	return c.Path
}

func selfRef() punix.Ref {
	p, err := punix.Stat(os.Getpid())
	if err != nil {
		return punix.Ref{Pid: os.Getpid()}
	}
	return p.Ref()
}

// start takes the lock, makes the private directory and starts the agent.
// On failure it leaves what it made for abort to undo.
func (g *guardian) start() *failure {
	lockPath := filepath.Join(g.req.LockDir, g.key+".lock")
	if err := punix.SecureDir(g.req.LockDir); err != nil {
		return &failure{Code: CodeLock, Path: g.req.LockDir, Message: "lock directory: " + err.Error()}
	}
	rec, err := openRecord(g.req.LockDir, g.key)
	if err != nil {
		return &failure{Code: CodeLock, Path: filepath.Join(g.req.LockDir, g.key+".owner"), Message: err.Error()}
	}
	g.rec = rec
	if g.lock, err = punix.OpenLockFile(lockPath); err != nil {
		return &failure{Code: CodeLock, Path: lockPath, Message: err.Error()}
	}
	if err := rec.lock(recordWait); err != nil {
		prev, _ := rec.read()
		return &failure{Code: CodeContention, Message: err.Error(), Holder: prev.holder()}
	}
	defer rec.unlock()
	prev, perr := rec.read()
	if perr != nil {
		g.logf("ignoring unreadable owner record %s: %v", rec.f.Name(), perr)
		prev = nil
	}

	err = punix.TryLock(g.lock)
	if errors.Is(err, punix.ErrLocked) {
		if fl := g.takeOver(prev, lockPath); fl != nil {
			return fl
		}
	} else if err != nil {
		return &failure{Code: CodeLock, Path: lockPath, Message: err.Error()}
	}
	g.locked = true

	// The lock was free, but an earlier tree may live on after closing
	// its inherited lock descriptor: stop it before starting another.
	if prev != nil && (prev.Agent.Pid > 0 || prev.Cgroup != "") {
		if fl := g.stopLeftover(prev); fl != nil {
			return fl
		}
	}

	if g.req.Reclaim {
		return nil // the identity is free again; nothing to start
	}
	g.since = time.Now().UTC()
	name, err := randomName(g.key)
	if err != nil {
		return &failure{Code: CodeInternal, Message: err.Error()}
	}
	planned := filepath.Join(g.req.PrivateRoot, name)
	self := &record{Version: 1, Identity: g.req.Identity, Profile: g.req.Profile, Guardian: selfRef(), PrivateDir: planned, Since: g.since}
	if err := rec.write(self); err != nil {
		return &failure{Code: CodeLock, Path: rec.f.Name(), Message: "writing the owner record: " + err.Error()}
	}

	if err := punix.SecureDir(g.req.PrivateRoot); err != nil {
		return &failure{Code: CodePrivateDir, Path: g.req.PrivateRoot, Message: err.Error()}
	}
	if err := os.Mkdir(planned, 0o700); err != nil {
		return &failure{Code: CodePrivateDir, Path: planned, Message: err.Error()}
	}
	g.privateDir = planned

	if g.cgroup, g.scope = g.contain("tether-" + name); g.cgroup != nil {
		self.Cgroup = g.cgroup.Path
		if err := rec.write(self); err != nil {
			return &failure{Code: CodeLock, Path: rec.f.Name(), Message: "writing the owner record: " + err.Error()}
		}
	}

	if fl := g.spawn(); fl != nil {
		return fl
	}
	g.cgroup.CloseSpawnFD()
	self.Agent = g.agent
	if err := rec.write(self); err != nil {
		g.logf("writing the owner record: %v", err)
	}
	return nil
}

// takeOver handles a held lock: a live recorded guardian means contention;
// a dead one means its tree was abandoned, so stop that tree and take the
// lock once it is free.
func (g *guardian) takeOver(prev *record, lockPath string) *failure {
	if prev != nil && prev.Guardian.Pid > 0 && punix.Alive(prev.Guardian) {
		return &failure{Code: CodeContention, Message: "identity " + quote(g.req.Identity) + " is held by " + prev.holder().String(), Holder: prev.holder()}
	}
	holders, _ := punix.FileHolders(lockPath)
	tree := &punix.Tree{}
	for _, h := range holders {
		if h.Pid != os.Getpid() {
			tree.Extra = append(tree.Extra, h.Ref())
		}
	}
	if prev == nil && len(tree.Extra) == 0 {
		h := &Holder{Identity: g.req.Identity, Unknown: true}
		return &failure{Code: CodeContention, Message: "identity " + quote(g.req.Identity) + " is locked but no record says by whom", Holder: h}
	}
	if prev != nil {
		tree.Leader = prev.Agent
		if prev.Cgroup != "" {
			tree.Cgroup, _ = punix.OpenCgroup(prev.Cgroup)
		}
	}
	g.logf("guardian of %s is gone but its tree holds the lock; stopping that tree", prev.holder())
	if _, err := tree.Stop(g.req.StopTimeout.d(), g.req.KillGrace.d()); err != nil {
		return &failure{Code: CodeContention, Message: "the abandoned tree of " + prev.holder().String() + " could not be stopped: " + err.Error(), Holder: prev.holder()}
	}
	deadline := time.Now().Add(g.req.KillGrace.d())
	for {
		err := punix.TryLock(g.lock)
		if err == nil {
			break
		}
		if !errors.Is(err, punix.ErrLocked) {
			return &failure{Code: CodeLock, Path: lockPath, Message: err.Error()}
		}
		if time.Now().After(deadline) {
			return &failure{Code: CodeContention, Message: "the abandoned tree of " + prev.holder().String() + " was stopped but the lock is still held", Holder: prev.holder()}
		}
		time.Sleep(2 * time.Millisecond)
	}
	g.tookOver = prev.holder()
	if prev != nil {
		g.removeOld(prev)
	}
	return nil
}

// stopLeftover stops what is left of a recorded earlier tree.
func (g *guardian) stopLeftover(prev *record) *failure {
	tree := &punix.Tree{Leader: prev.Agent}
	if prev.Cgroup != "" {
		tree.Cgroup, _ = punix.OpenCgroup(prev.Cgroup)
	}
	ms, err := tree.Members()
	if err != nil {
		return &failure{Code: CodeInternal, Message: "scanning for an earlier tree: " + err.Error()}
	}
	if len(ms) > 0 {
		g.logf("an earlier tree of this identity (session %d) still has %d process(es); stopping them", prev.Agent.Pid, len(ms))
		if _, err := tree.Stop(g.req.StopTimeout.d(), g.req.KillGrace.d()); err != nil {
			return &failure{Code: CodeContention, Message: "an earlier tree of this identity could not be stopped: " + err.Error(), Holder: prev.holder()}
		}
	}
	g.removeOld(prev)
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

// spawn starts the agent in its own session (and cgroup), with the lock
// descriptor inherited so the lock lives as long as any process of the
// tree keeps it.
func (g *guardian) spawn() *failure {
	c, fl := g.command()
	if fl != nil {
		return fl
	}
	defer c.stdin.Close()
	path := c.path
	spec := punix.SpawnSpec{
		Path: path, Argv: g.req.Argv, Dir: c.dir, Env: c.env,
		Stdin: c.stdin, Stdout: g.log, Stderr: g.log,
		Extra:  []*os.File{g.lock},
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
		return &failure{Code: CodeSpawn, Cause: CauseExec, Path: path, Message: err.Error()}
	}
	g.agent = punix.Ref{Pid: pid}
	if p, err := punix.Stat(pid); err == nil {
		g.agent = p.Ref()
	}
	g.agentPid = pid
	exits := make(chan Exit, 1)
	go func() {
		if st, ok := <-exit; ok {
			exits <- toExit(st)
		}
	}()
	g.agentExit = exits
	g.tree = &punix.Tree{Leader: g.agent, Root: os.Getpid(), RootSubreaper: g.subreaper, Cgroup: g.cgroup}
	return nil
}

func toExit(st punix.ExitStatus) Exit {
	if st.Signal != 0 {
		return Exit{Code: -1, Signal: st.Signal.String()}
	}
	return Exit{Code: st.Code}
}

// stopTree stops the tree: SIGTERM, timeout, SIGKILL, the kill grace.
func (g *guardian) stopTree(timeout time.Duration) (stopReport, error) {
	rep, err := g.tree.Stop(timeout, g.req.KillGrace.d())
	// A scan of /proc is not atomic: a process reparented to the
	// guardian in the middle of it can be missed. The guardian is a
	// subreaper, so its having no children at all is the proof that no
	// descendant is left; a live child means a member was missed.
	for i := 0; err == nil && g.subreaper && g.reaper.ReapNow() && i < 20; i++ {
		var more punix.StopReport
		more, err = g.tree.Stop(timeout, g.req.KillGrace.d())
		rep.Terminated += more.Terminated
		rep.Killed += more.Killed
		rep.Forced = rep.Forced || more.Forced
	}
	out := stopReport{Terminated: rep.Terminated, Killed: rep.Killed, Forced: rep.Forced}
	var alive *punix.TreeAliveError
	if errors.As(err, &alive) {
		left := make([]int, 0, len(alive.Left))
		for _, p := range alive.Left {
			left = append(left, p.Pid)
		}
		return out, &treeAliveError{left: left, err: err}
	}
	return out, err
}

// afterStop reaps the members that died as zombies reparented here before
// the guardian exits, or they would fall to a parent that may not reap.
func (g *guardian) afterStop() {
	if !g.reaper.ReapAll(g.req.KillGrace.d()) {
		g.logf("children still unreaped after %v", g.req.KillGrace.d())
	}
}

func (g *guardian) removeContainment() error {
	if g.cgroup == nil {
		return nil
	}
	return g.cgroup.Remove()
}

func (g *guardian) unlockOwnership() error { return punix.Unlock(g.lock) }

func (g *guardian) closeOwnership() {
	if g.lock != nil {
		g.lock.Close()
	}
}

// commandHasDir says argv0 names a file rather than a command to look up
// in PATH, as execvp decides.
func commandHasDir(argv0 string) bool { return strings.Contains(argv0, "/") }

func defaultPath() string { return "/usr/local/bin:/usr/bin:/bin" }

// commandCandidates is the file itself: Unix adds no extensions.
func commandCandidates(p string, _ []string) []string { return []string{p} }

func notExecutable(p string, fi os.FileInfo, _ []string) string {
	if sys.Access(p, sys.X_OK) != nil {
		return fmt.Sprintf("command %q is not executable (mode %v)", p, fi.Mode().Perm())
	}
	return ""
}

// platformEnv adds nothing on Unix.
func platformEnv(env []string) []string { return env }

// envKey is the environment key as Unix compares it: exactly.
func envKey(k string) string { return k }
