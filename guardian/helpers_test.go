//go:build linux

package guardian

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	sys "golang.org/x/sys/unix"
)

// The test binary doubles as the guardian ("guardian"), as misbehaving
// agents ("helper ROLE") and as an owner process that can be SIGKILLed
// ("owner"), in the manner of os/exec's tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "guardian":
			os.Exit(Main(os.Args[2:]))
		case "helper":
			os.Exit(runHelper(os.Args[2:]))
		case "owner":
			os.Exit(runOwner())
		}
	}
	// Guardians of owners the tests kill are adopted here rather than by
	// an init that may not reap them.
	if _, err := punix.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Helper agents announce each process by creating "<role>.<pid>" in
// $HELPER_DIR, so tests can wait for a whole tree without sleeping.
func announce(role string) {
	dir := os.Getenv("HELPER_DIR")
	if dir == "" {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%s.%d", role, os.Getpid()))
	_ = os.WriteFile(name+".tmp", nil, 0o600)
	_ = os.Rename(name+".tmp", name)
}

func runHelper(args []string) int {
	role := args[0]
	// A helper outlives no test by much: bound its life.
	time.AfterFunc(2*time.Minute, func() { os.Exit(99) })
	term := make(chan os.Signal, 1)
	switch role {
	case "polite", "polite-closer":
		// Leader of a three-process tree: a worker in its own process
		// group and a double-forked escapee in its own session.
		signal.Notify(term, syscall.SIGTERM)
		if role == "polite-closer" {
			sys.Close(3) // drop the inherited lock descriptor
		}
		child := "sleeper"
		if role == "polite-closer" {
			child = "closer"
		}
		spawnSelf(child, &syscall.SysProcAttr{Setpgid: true}, true)
		// The middle of the double fork exits at once; reap it before
		// announcing, so it is not a zombie that outlives the test.
		runSelf("escape-" + child)
		announce("leader")
		<-term
		return 0
	case "sleeper", "closer":
		if role == "closer" {
			sys.Close(3)
		}
		signal.Notify(term, syscall.SIGTERM)
		announce(role)
		<-term
		return 0
	case "escape-sleeper", "escape-closer":
		spawnSelf(strings.TrimPrefix(role, "escape-"), &syscall.SysProcAttr{Setsid: true}, false)
		return 0
	case "stubborn":
		// Ignores SIGTERM, and so does its worker.
		signal.Ignore(syscall.SIGTERM)
		spawnSelf("stubborn-worker", &syscall.SysProcAttr{Setpgid: true}, true)
		announce("leader")
		select {}
	case "stubborn-worker":
		signal.Ignore(syscall.SIGTERM)
		announce("worker")
		select {}
	case "exit":
		code, _ := strconv.Atoi(args[1])
		return code
	case "env":
		// Writes its environment and then waits for SIGTERM.
		signal.Notify(term, syscall.SIGTERM)
		_ = os.WriteFile(filepath.Join(os.Getenv("HELPER_DIR"), "env"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
		announce("leader")
		<-term
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

func runSelf(role string) {
	cmd := exec.Command(os.Args[0], "helper", role)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
}

func spawnSelf(role string, attr *syscall.SysProcAttr, wait bool) {
	cmd := exec.Command(os.Args[0], "helper", role)
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	if wait {
		go func() { _ = cmd.Wait() }()
	}
}

// ownerOp is one command to an owner process, one JSON line each.
type ownerOp struct {
	Op   string `json:"op"` // "start" or "stop"
	Spec Spec   `json:"spec"`
}

type ownerReply struct {
	Ready *Ready `json:"ready,omitempty"`
	Code  Code   `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// runOwner starts sessions as told on stdin and holds them until killed.
func runOwner() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	sessions := map[string]*Session{}
	for in.Scan() {
		var op ownerOp
		if err := json.Unmarshal(in.Bytes(), &op); err != nil {
			fmt.Fprintln(os.Stderr, "owner:", err)
			return 1
		}
		var rep ownerReply
		switch op.Op {
		case "start":
			s, err := Start(context.Background(), op.Spec)
			if err != nil {
				rep.Error = err.Error()
				var se *StartError
				if errors.As(err, &se) {
					rep.Code = se.Code
				}
			} else {
				r := s.Ready()
				rep.Ready = &r
				sessions[op.Spec.Identity] = s
			}
		case "stop":
			if err := sessions[op.Spec.Identity].Stop(context.Background(), 0); err != nil {
				rep.Error = err.Error()
			}
		}
		b, _ := json.Marshal(rep)
		fmt.Printf("%s\n", b)
	}
	return 0
}

// env is one test's world: its lock dir, private root, log and helper dir.
type env struct {
	t      *testing.T
	dir    string
	locks  string
	priv   string
	helper string
	exe    string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, locks: filepath.Join(dir, "locks"), priv: filepath.Join(dir, "private"), helper: filepath.Join(dir, "helper")}
	if err := os.MkdirAll(e.helper, 0o700); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e.exe = exe
	checkNoLeaks(t)
	return e
}

func (e *env) spec(identity string, argv ...string) Spec {
	return Spec{
		Identity:    identity,
		Profile:     "test",
		Argv:        append([]string{e.exe, "helper"}, argv...),
		Env:         []string{"HELPER_DIR=" + e.helper, "PATH=/usr/bin:/bin"},
		StopTimeout: 2 * time.Second,
		LockDir:     e.locks,
		PrivateRoot: e.priv,
		LogPath:     filepath.Join(e.dir, "agent.log"),
		Executable:  e.exe,
	}
}

// start starts a session and registers its teardown.
func (e *env) start(spec Spec) *Session {
	e.t.Helper()
	s, err := Start(context.Background(), spec)
	if err != nil {
		e.t.Fatalf("Start: %v\nlog:\n%s", err, e.log())
	}
	e.t.Cleanup(func() { stopSession(e.t, s) })
	return s
}

func stopSession(t *testing.T, s *Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Stop(ctx, 0)
	s.Close()
	for range s.Events() {
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Errorf("guardian pid %d not reaped", s.Ready().GuardianPID)
	}
}

func (e *env) log() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "agent.log"))
	return string(b)
}

// waitAnnounced waits until the helper dir holds want entries per role,
// and returns their pids by role.
func (e *env) waitAnnounced(want map[string]int) map[string][]int {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string][]int{}
		ents, _ := os.ReadDir(e.helper)
		for _, d := range ents {
			role, pidS, ok := strings.Cut(d.Name(), ".")
			if pid, err := strconv.Atoi(pidS); ok && err == nil {
				got[role] = append(got[role], pid)
			}
		}
		done := true
		for role, n := range want {
			if len(got[role]) < n {
				done = false
			}
		}
		if done {
			return got
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("helpers announced %v, want %v\nlog:\n%s", got, want, e.log())
		}
		time.Sleep(time.Millisecond)
	}
}

// refs turns announced pids into references with start times.
func refs(t *testing.T, pids map[string][]int) []punix.Ref {
	t.Helper()
	var out []punix.Ref
	for _, ps := range pids {
		for _, pid := range ps {
			p, err := punix.Stat(pid)
			if err != nil {
				t.Fatalf("announced pid %d: %v", pid, err)
			}
			out = append(out, p.Ref())
		}
	}
	return out
}

func alive(rs []punix.Ref) []punix.Ref {
	var out []punix.Ref
	for _, r := range rs {
		if punix.Alive(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitGone polls until none of rs lives (zombies count as dead), reaping
// any that were adopted by this process, and returns how long it took.
func waitGone(t *testing.T, rs []punix.Ref, within time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	for {
		reapAdopted()
		if len(alive(rs)) == 0 {
			return time.Since(begin)
		}
		if time.Since(begin) > within {
			t.Fatalf("still alive after %v: %v", within, alive(rs))
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// reapAdopted reaps zombies that were reparented to this process (the
// test binary is a subreaper) and are not children any exec.Cmd waits on.
func reapAdopted() {
	procs, _ := punix.Processes()
	self := os.Getpid()
	for _, p := range procs {
		if p.PPid == self && p.Zombie() && adopted(p.Pid) {
			var ws sys.WaitStatus
			_, _ = sys.Wait4(p.Pid, &ws, sys.WNOHANG, nil)
		}
	}
}

// adopted tells an orphan reparented here from a child this process
// started: the start time of an adopted orphan is not in childStarts.
// Orphans here are always guardians whose owner process was killed, and
// their status is never waited for by anyone else.
func adopted(pid int) bool {
	adoptedMu.Lock()
	defer adoptedMu.Unlock()
	return adoptedPIDs[pid]
}

// expectAdopted records that pid will be reparented here.
func expectAdopted(pid int) {
	adoptedMu.Lock()
	defer adoptedMu.Unlock()
	adoptedPIDs[pid] = true
}

func lockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := punix.OpenLockFile(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer f.Close()
	if err := punix.TryLock(f); err != nil {
		return false
	}
	_ = punix.Unlock(f)
	return true
}

func gone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}

// privateDirs lists what is in the private root.
func (e *env) privateDirs() []string {
	ents, _ := os.ReadDir(e.priv)
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

// owner is an owner process the test can SIGKILL.
type owner struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (e *env) newOwner() *owner {
	e.t.Helper()
	cmd := exec.Command(e.exe, "owner")
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	o := &owner{t: e.t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return o
}

func (o *owner) do(op ownerOp) ownerReply {
	o.t.Helper()
	b, _ := json.Marshal(op)
	if _, err := o.in.Write(append(b, '\n')); err != nil {
		o.t.Fatal(err)
	}
	line, err := o.out.ReadBytes('\n')
	if err != nil {
		o.t.Fatalf("owner: %v", err)
	}
	var rep ownerReply
	if err := json.Unmarshal(line, &rep); err != nil {
		o.t.Fatal(err)
	}
	return rep
}

// start starts spec in the owner process and registers cleanup of the
// guardian it will leave behind when the owner is killed.
func (o *owner) start(spec Spec) *Ready {
	o.t.Helper()
	rep := o.do(ownerOp{Op: "start", Spec: spec})
	if rep.Ready == nil {
		o.t.Fatalf("owner start: %s", rep.Error)
	}
	g := rep.Ready.GuardianPID
	expectAdopted(g)
	o.t.Cleanup(func() {
		if p, err := punix.Stat(g); err == nil && !p.Zombie() {
			_ = syscall.Kill(g, syscall.SIGCONT)
			_ = syscall.Kill(g, syscall.SIGTERM)
		}
		gref := punix.Ref{Pid: g}
		if p, err := punix.Stat(g); err == nil {
			gref = p.Ref()
		}
		waitGone(o.t, []punix.Ref{gref}, 10*time.Second)
	})
	return rep.Ready
}

func (o *owner) kill() {
	o.t.Helper()
	if err := o.cmd.Process.Kill(); err != nil {
		o.t.Fatal(err)
	}
	_ = o.cmd.Wait()
}
