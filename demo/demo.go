//go:build unix

// Package demo is tether's self-contained crash-survival demonstration and
// the demo agent built into the binary. It runs everything in a throwaway
// directory and touches nothing of the user's.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-dev/tether/guardian"
	punix "github.com/tether-dev/tether/platform/unix"
)

// identity is the one identity the demo runs.
const identity = "demo@local"

// ownerAnswer is what an owner process prints once its guardian answered.
type ownerAnswer struct {
	OwnerPID int              `json:"owner_pid"`
	Ready    *guardian.Ready  `json:"ready,omitempty"`
	Code     guardian.Code    `json:"code,omitempty"`
	Error    string           `json:"error,omitempty"`
	Holder   *guardian.Holder `json:"holder,omitempty"`
}

// Run runs the demo and returns the exit code.
func Run(args []string) int {
	if len(args) == 1 && args[0] == "--owner" {
		return owner()
	}
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: tether demo")
		return 2
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tether demo: FAILED:", err)
		return 1
	}
	return 0
}

type env struct {
	dir    string
	exe    string
	out    io.Writer
	cmds   []*exec.Cmd
	stdins map[int]io.WriteCloser
	stdout map[int]*bufio.Reader
}

func run(out io.Writer) (err error) {
	// Adopt orphaned guardians so they are reaped here, not left as
	// zombies under an init that does not reap.
	_, _ = punix.BecomeSubreaper()
	dir, err := os.MkdirTemp("", "tether-demo-")
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	e := &env{dir: dir, exe: exe, out: out, stdins: map[int]io.WriteCloser{}, stdout: map[int]*bufio.Reader{}}
	defer func() {
		if cerr := e.cleanup(); err == nil {
			err = cerr
		}
	}()
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	say("tether demo: crash survival, in %s", dir)
	say("")
	say("1. An owner process starts a guardian for identity %q; the guardian starts the demo agent,", identity)
	say("   which starts a worker in its own process group and a double-forked escapee in its own session.")
	first, err := e.startOwner("demo")
	if err != nil {
		return err
	}
	r := first.Ready
	say("   owner pid %d -> guardian pid %d -> agent pid %d (containment: %s)", first.OwnerPID, r.GuardianPID, r.AgentPID, r.Containment)
	tree := &punix.Tree{Leader: punix.Ref{Pid: r.AgentPID}, Root: r.GuardianPID}
	members, err := waitTree(tree, r.AgentPID, 5*time.Second)
	if err != nil {
		return err
	}
	for _, p := range members {
		say("   %s", describe(p, r.AgentPID))
	}
	say("   private dir %s", r.PrivateDir)
	say("")

	say("2. SIGKILL the owner (pid %d). Nothing tells the guardian but EOF on its tether.", first.OwnerPID)
	took, err := e.killOwnerAndMeasure(first, members)
	if err != nil {
		return err
	}
	say("   tree gone, private dir removed and lock free after %.1f ms", float64(took.Microseconds())/1000)
	if line := lastLogLine(e.spec("demo").LogPath, "stopped (owner_lost)"); line != "" {
		say("   the guardian's log: %s", line)
	}
	say("")

	say("3. A new owner starts the identity again.")
	second, err := e.startOwner("demo")
	if err != nil {
		return err
	}
	say("   agent pid %d running; it is the only tree of %q", second.Ready.AgentPID, identity)
	say("")

	say("4. Another profile asks for the same identity.")
	third, err := e.startOwner("other")
	if err == nil {
		return fmt.Errorf("a second owner started %q while it was running (agent pid %d)", identity, third.Ready.AgentPID)
	}
	var ce *contentionError
	if !errors.As(err, &ce) {
		return err
	}
	say("   refused, code %q: %s", guardian.CodeContention, ce.msg)
	say("")

	say("5. The owner asks its guardian to stop the agent.")
	st, err := e.stopOwner(second)
	if err != nil {
		return err
	}
	say("   stopped in %s: %d process(es) got SIGTERM, %d needed SIGKILL; cleanup %s", st.Elapsed, st.Terminated, st.Killed, st.Code)
	say("")
	say("ok: one identity ran exactly once at a time, and nothing was left behind.")
	return nil
}

type contentionError struct{ msg string }

func (e *contentionError) Error() string { return e.msg }

func describe(p punix.Proc, agent int) string {
	role := "descendant"
	switch {
	case p.Pid == agent:
		role = "agent (session leader)"
	case p.Sid != agent:
		role = fmt.Sprintf("escapee in its own session %d", p.Sid)
	case p.Pgid != agent:
		role = fmt.Sprintf("worker in its own process group %d", p.Pgid)
	}
	return fmt.Sprintf("pid %-7d %s", p.Pid, role)
}

func (e *env) spec(profile string) guardian.Spec {
	return guardian.Spec{
		Identity:    identity,
		Profile:     profile,
		Argv:        []string{e.exe, "demo-agent"},
		Env:         []string{"PATH=" + os.Getenv("PATH")},
		StopTimeout: 2 * time.Second,
		LockDir:     filepath.Join(e.dir, "locks"),
		PrivateRoot: filepath.Join(e.dir, profile, "private"),
		LogPath:     filepath.Join(e.dir, profile, "logs", "demo.log"),
		Executable:  e.exe,
	}
}

// startOwner starts "tether demo --owner" and returns its answer.
func (e *env) startOwner(profile string) (*ownerAnswer, error) {
	cmd := exec.Command(e.exe, "demo", "--owner")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e.cmds = append(e.cmds, cmd)
	spec := e.spec(profile)
	if err := json.NewEncoder(in).Encode(spec); err != nil {
		return nil, err
	}
	br := bufio.NewReader(outPipe)
	e.stdins[cmd.Process.Pid], e.stdout[cmd.Process.Pid] = in, br
	line, err := br.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("owner process: %w", err)
	}
	var a ownerAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, fmt.Errorf("owner process: %w", err)
	}
	switch {
	case a.Code == guardian.CodeContention:
		_ = cmd.Wait()
		return nil, &contentionError{msg: a.Error}
	case a.Error != "":
		_ = cmd.Wait()
		return nil, errors.New(a.Error)
	}
	return &a, nil
}

// stopOwner asks an owner to stop its session and returns the cleanup.
func (e *env) stopOwner(a *ownerAnswer) (*guardian.Cleanup, error) {
	if _, err := io.WriteString(e.stdins[a.OwnerPID], "stop\n"); err != nil {
		return nil, err
	}
	line, err := e.stdout[a.OwnerPID].ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("owner process: %w", err)
	}
	var st stopAnswer
	if err := json.Unmarshal(line, &st); err != nil {
		return nil, fmt.Errorf("owner process: %w", err)
	}
	if st.Error != "" {
		return nil, errors.New(st.Error)
	}
	return st.Cleanup, nil
}

// stopAnswer is what an owner prints after a stop.
type stopAnswer struct {
	Cleanup *guardian.Cleanup `json:"cleanup,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// killOwnerAndMeasure SIGKILLs an owner and measures until its tree is
// gone, its private directory removed and its lock free.
func (e *env) killOwnerAndMeasure(a *ownerAnswer, members []punix.Proc) (time.Duration, error) {
	var cmd *exec.Cmd
	for _, c := range e.cmds {
		if c.Process.Pid == a.OwnerPID {
			cmd = c
		}
	}
	r := a.Ready
	tree := &punix.Tree{Leader: punix.Ref{Pid: r.AgentPID}, Root: r.GuardianPID}
	for _, p := range members {
		tree.Extra = append(tree.Extra, p.Ref())
	}
	begin := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		return 0, err
	}
	deadline := begin.Add(10 * time.Second)
	for {
		ms, _ := tree.Members()
		_, dirErr := os.Lstat(r.PrivateDir)
		if len(ms) == 0 && errors.Is(dirErr, os.ErrNotExist) && lockFree(r.LockPath) {
			took := time.Since(begin)
			_ = cmd.Wait()
			return took, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("after 10 s: %d process(es) left, private dir error %v", len(ms), dirErr)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// lastLogLine returns the part after "tether guardian[pid]: " of the
// last log line containing substr.
func lastLogLine(path, substr string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var found string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, substr) {
			if _, after, ok := strings.Cut(line, "]: "); ok {
				found = after
			}
		}
	}
	return found
}

func lockFree(path string) bool {
	f, err := punix.OpenLockFile(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if punix.TryLock(f) != nil {
		return false
	}
	_ = punix.Unlock(f)
	return true
}

// waitTree waits until the demo tree is complete: the agent, a worker in
// another process group and an escapee in another session, and nothing
// else (the middle of the double fork has exited).
func waitTree(t *punix.Tree, agent int, within time.Duration) ([]punix.Proc, error) {
	deadline := time.Now().Add(within)
	for {
		ms, err := t.Members()
		if err != nil {
			return nil, err
		}
		var worker, escapee bool
		for _, p := range ms {
			worker = worker || (p.Sid == agent && p.Pgid != agent)
			escapee = escapee || p.Sid != agent
		}
		if worker && escapee && len(ms) == 3 {
			return ms, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the demo tree is incomplete after %v: %d process(es)", within, len(ms))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) cleanup() error {
	for _, c := range e.cmds {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	// Guardians of killed owners were adopted here; wait for them.
	reapOrphans(5 * time.Second)
	var left []string
	filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".lock") && !strings.HasSuffix(p, ".owner") && !strings.HasSuffix(p, ".log") {
			left = append(left, p)
		}
		return nil
	})
	if err := os.RemoveAll(e.dir); err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	return nil
}

// owner is the owner process: it reads a Spec on stdin, starts a guardian,
// prints the answer and then waits until it is killed or stdin closes.
func owner() int {
	var spec guardian.Spec
	in := bufio.NewReader(os.Stdin)
	if err := json.NewDecoder(in).Decode(&spec); err != nil {
		fmt.Fprintln(os.Stderr, "demo owner:", err)
		return 1
	}
	a := ownerAnswer{OwnerPID: os.Getpid()}
	s, err := guardian.Start(context.Background(), spec)
	if err != nil {
		a.Error = err.Error()
		var se *guardian.StartError
		if errors.As(err, &se) {
			a.Code, a.Holder = se.Code, se.Holder
		}
	} else {
		r := s.Ready()
		a.Ready = &r
	}
	b, _ := json.Marshal(a)
	fmt.Printf("%s\n", b)
	if err != nil {
		return 1
	}
	// Each "stop" line stops the session; EOF ends the owner.
	for {
		line, err := in.ReadString('\n')
		if strings.TrimSpace(line) == "stop" {
			var st stopAnswer
			serr := s.Stop(context.Background(), 0)
			for ev := range s.Events() {
				if ev.Type == guardian.EventStopped {
					st.Cleanup = ev.Cleanup
				}
			}
			if serr != nil {
				st.Error = serr.Error()
			}
			b, _ := json.Marshal(st)
			fmt.Printf("%s\n", b)
		}
		if err != nil {
			return 0
		}
	}
}
