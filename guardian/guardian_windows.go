//go:build windows

package guardian

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	pwin "github.com/tether-dev/tether/platform/windows"
	"github.com/tether-dev/tether/wire"
	"golang.org/x/sys/windows"
)

const notByHand = `tether guardian: this is tether's internal lifetime owner for one agent.
The tether service starts it with an inherited pipe handle and sends it the
agent to run; it is not meant to be run by hand. To run an agent, use
"tether start ID".
`

// containmentCleanupCode is the cleanup code of a containment that could
// not be removed: closing the job object failed.
const containmentCleanupCode = wire.CleanupInternal

// osGuardian is the Windows half of a guardian: the named mutex, the job
// object and the handles on the agent and on the owner.
type osGuardian struct {
	owner     *pwin.Process // watched as a second sign of the owner's death
	ownerDead chan struct{} // closed when the owner was gone before it could be watched
	mutex     *pwin.Mutex
	mutexName string
	job       *pwin.Job
	agent     *pwin.Process
}

// guardianArgs is what the owner puts on the guardian's command line:
// the value of the inherited tether handle and the owner's process
// reference. Neither is a secret.
type guardianArgs struct {
	tether uintptr
	owner  procRef
}

func parseArgs(args []string) (guardianArgs, error) {
	var a guardianArgs
	var haveTether, haveOwner bool
	for _, arg := range args {
		switch k, v, _ := strings.Cut(arg, "="); k {
		case "--tether":
			h, err := strconv.ParseUint(v, 0, 64)
			if err != nil || h == 0 {
				return a, fmt.Errorf("bad tether handle %q", v)
			}
			a.tether, haveTether = uintptr(h), true
		case "--owner":
			pid, start, ok := strings.Cut(v, ":")
			p, err1 := strconv.Atoi(pid)
			s, err2 := strconv.ParseUint(start, 10, 64)
			if !ok || err1 != nil || err2 != nil || p <= 0 {
				return a, fmt.Errorf("bad owner %q", v)
			}
			a.owner, haveOwner = procRef{Pid: p, Start: s}, true
		default:
			return a, fmt.Errorf("unknown argument %q", arg)
		}
	}
	if !haveTether || !haveOwner {
		return a, errors.New("missing --tether or --owner")
	}
	return a, nil
}

func (a guardianArgs) list() []string {
	return []string{fmt.Sprintf("--tether=%d", a.tether), fmt.Sprintf("--owner=%d:%d", a.owner.Pid, a.owner.Start)}
}

// Main runs the guardian process; args are the arguments after
// "guardian" (or after tether-guardian.exe). It returns the process exit
// code. With the one argument protocolArg it only says which protocol
// version it speaks.
func Main(args []string) int {
	if len(args) == 1 && args[0] == protocolArg {
		return answerProtocol(os.Stdout)
	}
	a, err := parseArgs(args)
	if err != nil {
		fmt.Fprint(os.Stderr, notByHand)
		return 2
	}
	conn, err := pwin.InheritedFile(a.tether, "tether")
	if err != nil {
		// Run by hand with made-up arguments, most likely.
		fmt.Fprintf(os.Stderr, "%stether guardian: %v\n", notByHand, err)
		return 2
	}
	return run(conn, a.owner)
}

func run(conn *os.File, owner procRef) int {
	// The agent shares the guardian's console: a CTRL_C or CTRL_BREAK
	// for the whole console reaches the guardian too. It is not the
	// guardian's to act on, and an unhandled one would kill it, so it is
	// taken and dropped. Close, logoff and shutdown arrive as SIGTERM
	// and end the agent's life.
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	go func() {
		for range intr {
		}
	}()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)

	g := &guardian{conn: conn}
	// The tether's EOF is the first sign of the owner's death; its
	// process handle is a second one. If it is gone already, the
	// guardian tears down as soon as it has anything to tear down.
	switch p, err := pwin.OpenProcess(owner); {
	case err == nil:
		g.owner = p
		defer func() { _ = g.watchOwner(nil) }()
	case errors.Is(err, pwin.ErrNoProcess):
		g.ownerDead = make(chan struct{})
		close(g.ownerDead)
	default:
		fmt.Fprintf(os.Stderr, "tether guardian: watching owner pid %d: %v (the tether alone will tell its death)\n", owner.Pid, err)
	}
	return g.serve(term)
}

// redirectOutput makes f the guardian's standard output and error, for
// the runtime's own crash output too (it asks for the standard handle at
// each write), and closes the handles they replace, among them the
// owner's stderr pipe.
func redirectOutput(f *os.File) error {
	for _, std := range []uint32{windows.STD_OUTPUT_HANDLE, windows.STD_ERROR_HANDLE} {
		if err := windows.SetStdHandle(std, windows.Handle(f.Fd())); err != nil {
			return fmt.Errorf("SetStdHandle(%d): %w", int32(std), err)
		}
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = f, f
	for _, old := range []*os.File{oldOut, oldErr} {
		if old != nil && old != f {
			old.Close()
		}
	}
	return nil
}

func (g *guardian) settle() {}

// siblings has nobody to count on Windows, where a dead owner's
// guardians share no memory.
func (g *guardian) siblings() siblings { return nil }

// prepareOS has nothing to do on Windows: the job is made per start.
func (g *guardian) prepareOS() {}

// ownerEOF is at: the owner's handle, watched beside the tether, is what
// tells its death here.
func (g *guardian) ownerEOF(at time.Time) time.Time { return at }

func (g *guardian) ownerGone() <-chan struct{} {
	if g.owner != nil {
		return g.owner.Exited()
	}
	return g.ownerDead
}

// watchOwner watches the process r names from now on instead of the
// owner before (a new owner attached); nil stops watching.
func (g *guardian) watchOwner(r *procRef) error {
	if g.owner != nil {
		g.owner.Close()
	}
	g.owner, g.ownerDead = nil, nil
	if r == nil {
		return nil
	}
	p, err := pwin.OpenProcess(*r)
	if errors.Is(err, pwin.ErrNoProcess) {
		// Gone already: as good as its death.
		g.ownerDead = make(chan struct{})
		close(g.ownerDead)
	}
	if err != nil {
		return err
	}
	g.owner = p
	return nil
}

func (g *guardian) containment() wire.Containment { return wire.ContainmentJob }

func (g *guardian) describe(r *wire.Ready) {
	r.Job = g.job.Name()
	r.LockPath = g.mutexName
}

// MutexName returns the name of the named mutex that is an identity's
// ownership lock: Local\tether-<user>-<Key(identity)>, where <user> is a
// hash of the user's SID, so that two users of one session never share
// an identity, and two profiles of one user always do.
func MutexName(identity string) (string, error) {
	tag, err := userTag()
	if err != nil {
		return "", err
	}
	return `Local\tether-` + tag + "-" + Key(identity), nil
}

func userTag() (string, error) {
	sid, err := pwin.UserSID()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(sid))
	return hex.EncodeToString(sum[:8]), nil
}

// acquire takes the named mutex of the identity. A held mutex is
// contention: its holder is alive, since a mutex is abandoned, and so
// free, when its holding thread dies.
func (g *guardian) acquire(prev *record) *wire.Failure {
	var err error
	if g.mutexName, err = MutexName(g.req.Identity); err != nil {
		return &wire.Failure{Code: wire.CodeLock, Message: err.Error()}
	}
	g.mutex, err = pwin.TryLockMutex(g.mutexName)
	if errors.Is(err, pwin.ErrLocked) {
		h := prev.holder()
		return &wire.Failure{Code: wire.CodeContention, Message: "identity " + quote(g.req.Identity) + " is held by " + h.String(), Holder: h}
	}
	if err != nil {
		return &wire.Failure{Code: wire.CodeLock, Path: g.mutexName, Message: err.Error()}
	}
	return nil
}

// clearEarlier: the mutex was free. A record left behind means its holder
// died without releasing (a mutex whose object outlived its holder also
// says so, as abandoned). Its job took its tree down with it, but make
// sure before starting another: the job outlives the guardian for as long
// as Windows takes to end its processes.
func (g *guardian) clearEarlier(prev *record) *wire.Failure {
	if prev != nil {
		g.logf("identity was held by %s, which ended without releasing it (mutex abandoned: %v)", prev.holder(), g.mutex.Abandoned)
		if fl := g.stopLeftover(prev); fl != nil {
			return fl
		}
		g.tookOver = prev.holder()
	} else if g.mutex.Abandoned {
		g.logf("mutex %s was abandoned by a holder that left no record", g.mutexName)
		g.tookOver = &wire.Holder{Identity: g.req.Identity, Unknown: true}
	}
	return nil
}

// contain creates the agent's kill-on-close job object, named after the
// private directory: Local\tether-<user>-<name>.
func (g *guardian) contain(name string, self *record) *wire.Failure {
	tag, _ := userTag()
	job, err := pwin.NewJob(`Local\tether-` + tag + "-" + name)
	if err != nil {
		return &wire.Failure{Code: wire.CodeInternal, Message: "creating the job object: " + err.Error()}
	}
	g.job = job
	self.Job = job.Name()
	return nil
}

// stopLeftover stops what is left of the job of a holder that died, and
// removes its private directory.
func (g *guardian) stopLeftover(prev *record) *wire.Failure {
	if prev.Job != "" {
		job, err := pwin.OpenJob(prev.Job)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// Gone with its last process.
		case err != nil:
			return &wire.Failure{Code: wire.CodeInternal, Message: "opening the job of an earlier tree: " + err.Error()}
		default:
			defer job.Close()
			if n, _ := job.Active(); n > 0 {
				g.logf("an earlier tree of this identity (job %s) still has %d process(es); stopping them", prev.Job, n)
			}
			if _, err := job.Stop(nil, 0, g.req.KillGrace.Duration()); err != nil {
				return &wire.Failure{Code: wire.CodeContention, Message: "an earlier tree of this identity could not be stopped: " + err.Error(), Holder: prev.holder()}
			}
		}
	}
	g.removeOldDir(prev)
	return nil
}

// spawn starts the agent inside the job, suspended until it is in it.
func (g *guardian) spawn(c *agentCommand) (procRef, <-chan wire.Exit, *wire.Failure) {
	p, err := pwin.StartInJob(pwin.SpawnSpec{
		Path: c.path, Argv: c.argv, Dir: c.dir, Env: c.env,
		Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr,
	}, g.job)
	if err != nil {
		cause := wire.CauseExec
		switch {
		case errors.Is(err, os.ErrNotExist):
			cause = wire.CauseNotFound
		case errors.Is(err, windows.ERROR_BAD_EXE_FORMAT), errors.Is(err, os.ErrPermission):
			cause = wire.CauseNotExecutable
		}
		return procRef{}, nil, &wire.Failure{Code: wire.CodeSpawn, Cause: cause, Path: c.path, Message: err.Error()}
	}
	g.agent = p
	exits := make(chan wire.Exit, 1)
	go func() {
		<-p.Exited()
		code, _ := p.ExitCode()
		exits <- wire.Exit{Code: int(code)}
	}()
	return p.Ref(), exits, nil
}

// stopTree asks the agent's process group to stop (CTRL_BREAK), gives the
// job the stop timeout to empty, terminates what is left, and confirms the
// job empty within the kill grace. Without a console to carry the request,
// the job is terminated at once.
func (g *guardian) stopTree(timeout time.Duration) (stopReport, error) {
	if g.job == nil {
		return stopReport{}, nil
	}
	graceful := func() error { return pwin.CtrlBreak(g.agentPid) }
	rep, err := g.job.Stop(graceful, timeout, g.req.KillGrace.Duration())
	if rep.Graceful != nil {
		g.logf("no graceful stop request could be made (%v); terminating the job", rep.Graceful)
	}
	out := stopReport{Terminated: rep.Requested, Killed: rep.Killed, Forced: rep.Forced}
	var alive *pwin.JobAliveError
	if errors.As(err, &alive) {
		// A job reports its members' pids; Windows has no state to add.
		left := make([]wire.Survivor, 0, len(alive.Pids))
		for _, pid := range alive.Pids {
			left = append(left, wire.Survivor{PID: pid})
		}
		return out, &treeAliveError{left: left, err: err}
	}
	return out, err
}

// waitLeft waits d between two cleanup retries: a job's members that
// end are seen at the next retry.
func (g *guardian) waitLeft(_ error, d time.Duration) { time.Sleep(d) }

func (g *guardian) afterStop() {}

// removeContainment closes the job, now empty.
func (g *guardian) removeContainment() error {
	if g.job == nil {
		return nil
	}
	err := g.job.Close()
	g.job = nil
	return err
}

// unlockOwnership releases the mutex, on the thread that holds it.
func (g *guardian) unlockOwnership() error { return g.mutex.Unlock() }

func (g *guardian) closeOwnership() {}

// platformEnv adds SYSTEMROOT when the agent's environment lacks it:
// Windows programs need it (Winsock, among others, fails without it), and
// os/exec adds it for the same reason.
func platformEnv(env []string) []string {
	if _, ok := lookupEnv(env, "SYSTEMROOT"); !ok {
		if v, ok := os.LookupEnv("SYSTEMROOT"); ok {
			env = append(env, "SYSTEMROOT="+v)
		}
	}
	return env
}
