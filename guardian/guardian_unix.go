//go:build unix

package guardian

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	sys "golang.org/x/sys/unix"
)

// tetherFD is the descriptor the owner passes the guardian's end of the
// socket pair on.
const tetherFD = 3

const (
	// recordWait bounds the wait for another guardian's record lock.
	recordWait = 2 * time.Second
	// defaultKillGrace is how long the kernel gets to finish off a tree
	// after SIGKILL before the tree counts as alive.
	defaultKillGrace = 2 * time.Second
	// writeWait bounds one write to the owner, so an owner that stopped
	// reading cannot stall a teardown.
	writeWait = 2 * time.Second
	// retryMax caps the backoff between cleanup retries.
	retryMax = 30 * time.Second
)

const notByHand = `tether guardian: this is tether's internal lifetime owner for one agent.
The tether service starts it with a socket on descriptor 3 and sends it the
agent to run; it is not meant to be run by hand. To run an agent, use
"tether start ID".
`

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

type guardian struct {
	conn  *os.File
	outMu sync.Mutex

	req    request
	key    string
	log    *os.File
	reaper *punix.Reaper

	subreaper  bool
	rec        *recordFile
	lock       *os.File
	locked     bool
	privateDir string
	cgroup     *punix.Cgroup
	tree       *punix.Tree
	agent      punix.Ref
	agentExit  <-chan punix.ExitStatus
	since      time.Time
	tookOver   *Holder
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

	// No deadline: a guardian may be started ahead of need (Pool) and
	// wait for its request; if its owner dies first, EOF ends the wait.
	rd := newLineReader(conn)
	m, err := rd.next()
	if errors.Is(err, io.EOF) {
		return 0 // released unused
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tether guardian: reading the start request: %v\n", err)
		return 1
	}
	switch {
	case m.Type != msgStart || m.Start == nil:
		g.fail(&failure{Code: CodeConfig, Message: fmt.Sprintf("first message is %q, want %q", m.Type, msgStart)})
		return 1
	case m.Version != ProtocolVersion:
		g.fail(&failure{Code: CodeConfig, Message: fmt.Sprintf("protocol version %d; this guardian speaks %d", m.Version, ProtocolVersion)})
		return 1
	}
	g.req = *m.Start
	if err := g.req.validate(); err != nil {
		g.fail(&failure{Code: CodeConfig, Message: err.Error()})
		return 1
	}
	g.key = Key(g.req.Identity)
	if g.req.KillGrace == 0 {
		g.req.KillGrace = Duration(defaultKillGrace)
	}
	if fl := g.openLog(); fl != nil {
		g.fail(fl)
		return 1
	}
	if fl := g.start(); fl != nil {
		g.abort()
		g.logf("not started: %s: %s", fl.Code, fl.Message)
		g.fail(fl)
		return 1
	}
	if g.req.Reclaim {
		g.release()
		g.logf("identity reclaimed")
		g.send(message{Type: msgStopped, Version: ProtocolVersion, Reason: ReasonReclaimed, Cleanup: &Cleanup{Code: CleanupOK}})
		return 0
	}
	g.logf("started %s as pid %d (%s, private dir %s)", g.req.Argv[0], g.agent.Pid, g.containment(), g.privateDir)
	g.send(message{Type: msgReady, Version: ProtocolVersion, Ready: g.ready()})
	// From here the guardian mostly sleeps: let go of the pages that
	// start-up touched (see ReleaseExecutablePages).
	_ = punix.ReleaseExecutablePages()
	return g.watch(rd, term)
}

// openLog opens the agent's log and makes it the guardian's stdout and
// stderr too, so nothing the guardian prints from now on goes to the
// owner's pipe.
func (g *guardian) openLog() *failure {
	var err error
	if g.req.LogPath == "" {
		g.log, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	} else {
		if err = os.MkdirAll(filepath.Dir(g.req.LogPath), 0o700); err == nil {
			g.log, err = punix.OpenAppendNoFollow(g.req.LogPath)
		}
	}
	if err != nil {
		return &failure{Code: CodeSpawn, Path: g.req.LogPath, Message: "opening the log: " + err.Error()}
	}
	for _, fd := range []int{1, 2} {
		if err := punix.DupOnto(int(g.log.Fd()), fd); err != nil {
			return &failure{Code: CodeInternal, Message: fmt.Sprintf("redirecting descriptor %d to the log: %v", fd, err)}
		}
	}
	return nil
}

func (g *guardian) logf(format string, args ...any) {
	if g.log == nil {
		return
	}
	line := fmt.Sprintf("%s tether guardian[%d]: %s\n",
		time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), os.Getpid(), fmt.Sprintf(format, args...))
	_, _ = g.log.WriteString(line)
}

func (g *guardian) send(m message) {
	g.outMu.Lock()
	defer g.outMu.Unlock()
	_ = g.conn.SetWriteDeadline(time.Now().Add(writeWait))
	// Cleared after the write: an armed deadline would wake the idle
	// guardian later for nothing.
	defer g.conn.SetWriteDeadline(time.Time{})
	if err := writeMessage(g.conn, m); err != nil {
		g.logf("telling the owner %q: %v", m.Type, err)
	}
}

func (g *guardian) fail(f *failure) {
	g.send(message{Type: msgFailed, Version: ProtocolVersion, Failure: f})
}

func (g *guardian) containment() string {
	if g.cgroup != nil {
		return "cgroup+session"
	}
	return "session"
}

func (g *guardian) ready() *Ready {
	return &Ready{
		GuardianPID: os.Getpid(),
		AgentPID:    g.agent.Pid,
		SessionID:   g.agent.Pid,
		Containment: g.containment(),
		Cgroup:      cgroupPath(g.cgroup),
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

	if !g.req.NoCgroup {
		if cg, err := punix.NewCgroup("tether-" + name); err == nil {
			g.cgroup = cg
			self.Cgroup = cg.Path
			if err := rec.write(self); err != nil {
				return &failure{Code: CodeLock, Path: rec.f.Name(), Message: "writing the owner record: " + err.Error()}
			}
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
// The directory must look like one tether made for this identity.
func (g *guardian) removeOld(prev *record) {
	if d := prev.PrivateDir; d != "" && filepath.IsAbs(d) && strings.HasPrefix(filepath.Base(d), g.key+"-") {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			if err := os.RemoveAll(d); err != nil {
				g.logf("removing the private directory %s left by an earlier tree: %v", d, err)
			}
		}
	}
	if prev.Cgroup != "" {
		if cg, err := punix.OpenCgroup(prev.Cgroup); err == nil {
			_ = cg.Remove()
		}
	}
}

func randomName(key string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return key + "-" + hex.EncodeToString(b[:]), nil
}

// spawn starts the agent in its own session (and cgroup), with the lock
// descriptor inherited so the lock lives as long as any process of the
// tree keeps it.
func (g *guardian) spawn() *failure {
	env := agentEnv(g.req.Env, map[string]string{
		"TMPDIR": g.privateDir, "TMP": g.privateDir, "TEMP": g.privateDir,
		"TETHER_PRIVATE_DIR": g.privateDir, "TETHER_IDENTITY": g.req.Identity,
	})
	dir := g.req.Dir
	if dir == "" {
		dir = g.privateDir
	} else if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		msg := "working directory is not a directory"
		if err != nil {
			msg = "working directory: " + err.Error()
		}
		return &failure{Code: CodeSpawn, Cause: CauseBadDir, Path: dir, Message: msg}
	}
	path, fl := resolveCommand(g.req.Argv[0], dir, env)
	if fl != nil {
		return fl
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return &failure{Code: CodeInternal, Message: err.Error()}
	}
	defer null.Close()
	spec := punix.SpawnSpec{
		Path: path, Argv: g.req.Argv, Dir: dir, Env: env,
		Stdin: null, Stdout: g.log, Stderr: g.log,
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
	g.agentExit = exit
	g.tree = &punix.Tree{Leader: g.agent, Root: os.Getpid(), RootSubreaper: g.subreaper, Cgroup: g.cgroup}
	return nil
}

// agentEnv returns env with the keys of set replaced. glibc's getenv
// returns the first match, so old values are dropped, not shadowed.
func agentEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP", "TETHER_PRIVATE_DIR", "TETHER_IDENTITY"} {
		if v, ok := set[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// resolveCommand finds argv0 the way execvp would, in the PATH of the
// agent's environment, and says precisely why it cannot be run.
func resolveCommand(argv0, dir string, env []string) (string, *failure) {
	check := func(p string) (string, *failure) {
		fi, err := os.Stat(p)
		switch {
		case err != nil && errors.Is(err, os.ErrNotExist):
			return "", &failure{Code: CodeSpawn, Cause: CauseNotFound, Path: p, Message: "command " + quote(p) + " not found"}
		case err != nil:
			return "", &failure{Code: CodeSpawn, Cause: CauseNotExecutable, Path: p, Message: err.Error()}
		case fi.IsDir():
			return "", &failure{Code: CodeSpawn, Cause: CauseNotExecutable, Path: p, Message: "command " + quote(p) + " is a directory"}
		case sys.Access(p, sys.X_OK) != nil:
			return "", &failure{Code: CodeSpawn, Cause: CauseNotExecutable, Path: p, Message: fmt.Sprintf("command %q is not executable (mode %v)", p, fi.Mode().Perm())}
		}
		return p, nil
	}
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return check(p)
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	var firstBad *failure
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p, fl := check(filepath.Join(d, argv0))
		if fl == nil {
			return p, nil
		}
		if fl.Cause == CauseNotExecutable && firstBad == nil {
			firstBad = fl
		}
	}
	if firstBad != nil {
		return "", firstBad
	}
	return "", &failure{Code: CodeSpawn, Cause: CauseNotFound, Path: argv0, Message: fmt.Sprintf("command %q not found in PATH %q", argv0, pathEnv)}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// abort undoes a failed start: whatever it made, it removes, so a failed
// start leaves no lock, no directory and no process behind.
func (g *guardian) abort() {
	if g.tree != nil {
		if _, err := g.tree.Stop(g.req.StopTimeout.d(), g.req.KillGrace.d()); err != nil {
			g.logf("stopping the agent after a failed start: %v", err)
		}
	}
	if g.privateDir != "" {
		_ = os.RemoveAll(g.privateDir)
	}
	if g.cgroup != nil {
		_ = g.cgroup.Remove()
	}
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
		_ = punix.Unlock(g.lock)
		g.locked = false
		if !busy {
			g.rec.unlock()
		}
	}
	if g.lock != nil {
		g.lock.Close()
	}
	g.rec.close()
	g.rec = nil
}

// watch waits for the one thing that ends the agent's life: a stop
// request, the owner's death (EOF on the tether), a terminating signal, or
// the agent's own exit. It blocks in the runtime's poller with no timer:
// an idle guardian does not wake up. A SIGSTOP/SIGCONT of the guardian or
// an interrupted read changes nothing here; only EOF or a read error ends
// the wait.
func (g *guardian) watch(rd *lineReader, term <-chan os.Signal) int {
	msgs := make(chan message, 4)
	readErr := make(chan error, 1)
	go func() {
		for {
			m, err := rd.next()
			if err != nil {
				readErr <- err
				return
			}
			msgs <- m
		}
	}()
	timeout := g.req.StopTimeout.d()
	var reason StopReason
	var exit *Exit
	for reason == "" {
		select {
		case m := <-msgs:
			if m.Type == msgStop {
				reason = ReasonStopRequested
				if m.Timeout != nil && *m.Timeout > 0 {
					timeout = m.Timeout.d()
				}
			} else {
				g.logf("ignoring unexpected %q message", m.Type)
			}
		case err := <-readErr:
			reason = ReasonOwnerLost
			if !errors.Is(err, io.EOF) {
				g.logf("tether read failed: %v", err)
			}
		case s := <-term:
			reason = ReasonSignal
			g.logf("received %v", s)
		case st := <-g.agentExit:
			e := toExit(st)
			exit = &e
			g.agentExit = nil
			reason = ReasonAgentExited
			g.logf("agent pid %d exited: %s", g.agent.Pid, e)
			g.send(message{Type: msgExited, Exit: exit})
		}
	}
	return g.teardown(reason, timeout, exit)
}

func toExit(st punix.ExitStatus) Exit {
	if st.Signal != 0 {
		return Exit{Code: -1, Signal: st.Signal.String()}
	}
	return Exit{Code: st.Code}
}

// teardown stops the tree, removes the private directory and cgroup, and
// only then releases the lock. A tree that cannot be confirmed empty keeps
// the lock and is retried with backoff, reported each time.
func (g *guardian) teardown(reason StopReason, timeout time.Duration, exit *Exit) int {
	begin := time.Now()
	g.logf("stopping (%s), stop timeout %v", reason, timeout)
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
	backoff := time.Second
	for err != nil {
		c := &Cleanup{Code: CleanupTreeAlive, Message: err.Error(), Terminated: rep.Terminated, Killed: rep.Killed, Forced: rep.Forced, Elapsed: Duration(time.Since(begin))}
		var alive *punix.TreeAliveError
		if errors.As(err, &alive) {
			for _, p := range alive.Left {
				c.Left = append(c.Left, p.Pid)
			}
		} else {
			c.Code = CleanupInternal
		}
		retry := Duration(backoff)
		g.logf("cleanup failed, lock kept, retrying in %v: %v", backoff, err)
		g.send(message{Type: msgCleanupFailed, Cleanup: c, Retry: &retry, Reason: reason})
		time.Sleep(backoff)
		backoff = min(2*backoff, retryMax)
		var more punix.StopReport
		more, err = g.tree.Stop(0, g.req.KillGrace.d())
		rep.Terminated += more.Terminated
		rep.Killed += more.Killed
	}
	// Members that died as zombies were reparented here; reap them all
	// before exiting, or they would fall to a parent that may not reap.
	if !g.reaper.ReapAll(g.req.KillGrace.d()) {
		g.logf("children still unreaped after %v", g.req.KillGrace.d())
	}
	if exit == nil {
		select {
		case st := <-g.agentExit:
			e := toExit(st)
			exit = &e
		default:
		}
	}
	c := &Cleanup{Code: CleanupOK, Terminated: rep.Terminated, Killed: rep.Killed, Forced: rep.Forced}
	if err := os.RemoveAll(g.privateDir); err != nil {
		c.Code, c.Message = CleanupPrivateDir, err.Error()
	}
	if g.cgroup != nil {
		if err := g.cgroup.Remove(); err != nil && c.Code == CleanupOK {
			c.Code, c.Message = CleanupCgroup, err.Error()
		}
	}
	g.release()
	c.Elapsed = Duration(time.Since(begin))
	if c.Code == CleanupOK {
		g.logf("stopped (%s) in %v: %d terminated, %d killed", reason, c.Elapsed.d(), c.Terminated, c.Killed)
	} else {
		g.logf("stopped (%s) in %v with a cleanup error: %s: %s", reason, c.Elapsed.d(), c.Code, c.Message)
	}
	g.send(message{Type: msgStopped, Cleanup: c, Reason: reason, Exit: exit})
	return 0
}

func (d Duration) d() time.Duration { return time.Duration(d) }
