//go:build unix

package unix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as every child process the tests need: each
// role of runHelper is a helper (testproc). A helper that should report
// readiness announces "TAG PID START" on the readiness pipe it was given,
// which the test reads with a deadline; nothing waits for a child by
// sleeping.
const (
	tagEnv      = "TETHER_UNIX_TEST_TAG"      // the tag of the readiness line
	isolatedEnv = "TETHER_UNIX_TEST_ISOLATED" // name of the test a fresh test binary runs alone
)

// roles are the helpers runHelper plays.
var roles = []string{"sleep", "ignore-term", "exit", "leader", "middle", "lock-try", "lock-hold", "lock-pass", "zombie-leader", "burn"}

// helperLife bounds the life of every helper, so that nothing a failed or
// killed test run leaves behind lives on for long.
const helperLife = 60 * time.Second

// burnBytes is the memory the "burn" helper holds, every page written.
const burnBytes = 64 << 20

// waitLimit bounds every wait for a process to start, exit or be reaped.
const waitLimit = 10 * time.Second

// subreaper reports whether the test process is a child subreaper, so
// double-forked helpers come back to it (Linux only).
var subreaper bool

func init() {
	for _, role := range roles {
		testproc.Register(role, func(args []string) int { return runHelper(role, args) })
	}
	if testproc.Name() == "zombie-leader" {
		// Called from init, this keeps the main goroutine, and so the
		// helper, on the main thread, the thread group leader.
		runtime.LockOSThread()
	}
}

// PID 1 on the machines this runs on may not reap: orphans must come back
// to the test process, where they are reaped, and whatever outlives the
// tests is a failure.
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.HelperLife(helperLife), testproc.Sweep(), testproc.NoLeaks(), testproc.EveryHelperUsed(),
		testproc.Before(func() (err error) {
			subreaper, err = BecomeSubreaper()
			return err
		}))
}

// runHelper plays one helper role and returns the exit code.
func runHelper(role string, args []string) int {
	switch role {
	case "sleep":
		// Waits; SIGTERM kills it (the runtime's default action).
		announce()
		return idle()
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		announce()
		return idle()
	case "exit":
		// Exits at once with the code in args[0], or else in its tag.
		code := os.Getenv(tagEnv)
		if len(args) > 0 {
			code = args[0]
		}
		n, _ := strconv.Atoi(code)
		return n
	case "leader":
		// Starts one child per argument, KIND:ROLE:TAG, where KIND is
		// "child" (same process group), "pgrp" (a process group of its
		// own) or "escape" (a middle process starts ROLE in a new
		// session and exits at once: a double fork). Then it waits like
		// "sleep".
		for _, a := range args {
			kind, rest, _ := strings.Cut(a, ":")
			role, tag, _ := strings.Cut(rest, ":")
			switch kind {
			case "child":
				spawnHelper(role, tag, nil, nil, true)
			case "pgrp":
				spawnHelper(role, tag, nil, &syscall.SysProcAttr{Setpgid: true}, true)
			case "escape":
				spawnHelper("middle", "", []string{role, tag}, nil, true)
			default:
				fmt.Fprintln(os.Stderr, "leader: bad child", a)
				return 2
			}
		}
		announce()
		return idle()
	case "middle":
		spawnHelper(args[0], args[1], nil, &syscall.SysProcAttr{Setsid: true}, false)
		return 0
	case "burn":
		// Writes every page of burnBytes of memory, announces itself,
		// then keeps a CPU busy until killed.
		mem := make([]byte, burnBytes)
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
		announce()
		for n := 0; ; n++ {
			mem[n%len(mem)]++
		}
	case "lock-try":
		// Prints "locked" or "acquired" for the lock file args[0].
		f, err := OpenLockFile(args[0])
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		switch err := TryLock(f); {
		case err == nil:
			fmt.Println("acquired")
		case errors.Is(err, ErrLocked):
			fmt.Println("locked")
		default:
			fmt.Println("error", err)
			return 1
		}
		return 0
	case "lock-hold":
		// Holds the lock on args[0] until killed.
		f, err := OpenLockFile(args[0])
		if err == nil {
			err = TryLock(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lock-hold:", err)
			return 1
		}
		announce()
		return idle()
	case "lock-pass":
		// Takes the lock on args[0], starts a "sleep" child that
		// inherits the descriptor (as its descriptor 4) and exits.
		f, err := OpenLockFile(args[0])
		if err == nil {
			err = TryLock(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lock-pass:", err)
			return 1
		}
		spawnHelper("sleep", args[1], nil, nil, false, f)
		return 0
	case "zombie-leader":
		// The main thread exits on its own (as pthread_exit in a C
		// program's main does) while another thread keeps the process
		// running: /proc shows the thread group leader as a zombie.
		// init locked the main goroutine to the main thread.
		done := make(chan struct{})
		go func() {
			announce()
			close(done)
			for {
				time.Sleep(time.Hour)
			}
		}()
		<-done
		syscall.Syscall(syscall.SYS_EXIT, 0, 0, 0)
		return 97 // not reached
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

func idle() int {
	time.Sleep(helperLife)
	return 98
}

// announce writes the readiness line of this process, if it was given a
// readiness pipe.
func announce() {
	p, err := Stat(os.Getpid())
	if err == nil {
		err = testproc.Announce(fmt.Sprintf("%s %d %d", os.Getenv(tagEnv), p.Pid, p.Start))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "announce:", err)
		os.Exit(3)
	}
}

// spawnHelper is how a helper starts another helper, passing its own
// readiness pipe on and extra as descriptors 3, 4, ...
func spawnHelper(role, tag string, args []string, attr *syscall.SysProcAttr, wait bool, extra ...*os.File) {
	cmd := helperCommand(role, tag, args...)
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = extra
	testproc.PassOn(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(3)
	}
	if wait {
		go func() { _ = cmd.Wait() }()
	}
}

// helperCommand is the command of the helper role with args, whose
// readiness lines carry tag.
func helperCommand(role, tag string, args ...string) *exec.Cmd {
	leaderUses(role, args)
	cmd := testproc.Command(role, args...)
	cmd.Env = append(childEnviron(), tagEnv+"="+tag)
	return cmd
}

// leaderUses tells testproc of the helpers that a "leader" started with
// args starts itself, and the "middle" process of an escape.
func leaderUses(role string, args []string) {
	if role != "leader" {
		return
	}
	for _, a := range args {
		kind, rest, _ := strings.Cut(a, ":")
		child, _, _ := strings.Cut(rest, ":")
		testproc.Used(child)
		if kind == "escape" {
			testproc.Used("middle")
		}
	}
}

// childEnviron is the environment of a helper (testproc.Environ) without
// this package's settings.
func childEnviron() []string {
	var env []string
	for _, kv := range testproc.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != tagEnv && k != isolatedEnv {
			env = append(env, kv)
		}
	}
	return env
}

// readyPipe collects the readiness lines of a test's helpers.
type readyPipe struct {
	*testproc.Ready
	seen map[string]Ref
}

func newReadyPipe(t testing.TB) *readyPipe {
	t.Helper()
	return &readyPipe{Ready: testproc.NewReady(t), seen: make(map[string]Ref)}
}

// wait returns the processes that announced tags, reading until each has
// announced or the deadline passes.
func (rp *readyPipe) wait(t testing.TB, tags ...string) map[string]Ref {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	out := make(map[string]Ref, len(tags))
	for _, tag := range tags {
		for {
			if r, ok := rp.seen[tag]; ok {
				out[tag] = r
				break
			}
			line, err := rp.Line(time.Until(deadline))
			if err != nil {
				t.Fatalf("waiting for %q to announce itself (have %v): %v", tag, rp.seen, err)
			}
			var name string
			var r Ref
			if _, err := fmt.Sscanf(line, "%s %d %d", &name, &r.Pid, &r.Start); err != nil {
				t.Fatalf("bad readiness line %q: %v", line, err)
			}
			rp.seen[name] = r
		}
	}
	return out
}

// helperOpts configures startHelper.
type helperOpts struct {
	tag   string
	args  []string
	ready *readyPipe // the readiness pipe, when set
	extra []*os.File // descriptors 3, 4, ...
	attr  *syscall.SysProcAttr
}

// startHelper starts a helper with os/exec. It is killed and waited for
// when the test ends, whatever the outcome.
func startHelper(t testing.TB, role string, o helperOpts) *exec.Cmd {
	t.Helper()
	cmd := helperCommand(role, o.tag, o.args...)
	cmd.SysProcAttr = o.attr
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = o.extra
	if o.ready != nil {
		o.ready.Pass(cmd)
	}
	testproc.Start(t, cmd)
	return cmd
}

// startSession starts a helper with StartSession, which leaves reaping to
// the caller: the test reaps it by pid, or a Reaper does. It is killed
// when the test ends.
func startSession(t testing.TB, role string, o helperOpts, cg *Cgroup) (int, error) {
	t.Helper()
	leaderUses(role, o.args)
	spec := SpawnSpec{
		Path:   testproc.Executable(),
		Argv:   testproc.Argv(role, o.args...),
		Env:    append(childEnviron(), tagEnv+"="+o.tag),
		Stderr: os.Stderr,
		Cgroup: cg,
		Extra:  o.extra,
	}
	if o.ready != nil {
		spec.Extra, spec.Env = o.ready.Inherit(spec.Extra, spec.Env)
	}
	pid, err := StartSession(spec)
	if err != nil {
		return 0, err
	}
	// Until it is reaped the pid cannot be reused, so its Ref is sound.
	if p, err := Stat(pid); err == nil {
		t.Cleanup(func() { killAndReap(t, p.Ref()) })
	}
	return pid, nil
}

// killAndReap kills the process r names, if it still runs, and reaps it
// when it is a child of the test process (adopted orphans are). It never
// waits for any other pid.
func killAndReap(t testing.TB, r Ref) {
	t.Helper()
	if h, err := OpenHandle(r); err == nil {
		_ = h.Signal(syscall.SIGKILL)
		h.Close()
	}
	reapPid(t, r)
}

// reapPid waits until the process r names is gone or is a zombie whose
// parent is not the test process, reaping it when it is ours.
func reapPid(t testing.TB, r Ref) (unix.WaitStatus, bool) {
	t.Helper()
	var p Proc
	var ws unix.WaitStatus
	reaped := false
	if !testproc.Until(waitLimit, func() bool {
		var err error
		p, err = Stat(r.Pid)
		if err != nil || p.Start != r.Start {
			return true
		}
		if p.Zombie() && p.PPid == os.Getpid() {
			got, err := unix.Wait4(r.Pid, &ws, unix.WNOHANG, nil)
			reaped = err == nil && got == r.Pid
		}
		return reaped
	}) {
		t.Errorf("process %d (state %c, ppid %d) was not gone after %v", r.Pid, p.State, p.PPid, waitLimit)
	}
	return ws, reaped
}

// openHandle opens a Handle that is closed when the test ends.
func openHandle(t testing.TB, r Ref) *Handle {
	t.Helper()
	h, err := OpenHandle(r)
	if err != nil {
		t.Fatalf("OpenHandle(%+v): %v", r, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// afterIsolated run with the pid of an isolated test process once it has
// ended, to undo what its cleanups could not do if it was killed.
var afterIsolated []func(t *testing.T, pid int)

// isolated runs the calling test alone in a fresh copy of the test binary
// and reports whether the caller is that copy. Tests that reap every child
// (a Reaper) or treat every descendant of the process as theirs (Tree.Root)
// run there: the copy is its own child subreaper, so orphans of the test
// come back to it and to nothing else.
func isolated(t *testing.T) bool {
	t.Helper()
	if os.Getenv(isolatedEnv) == t.Name() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, testproc.Executable(), testproc.AloneArgs(t.Name(), 60*time.Second)...)
	cmd.Env = append(childEnviron(), isolatedEnv+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	for _, undo := range afterIsolated {
		undo(t, cmd.Process.Pid)
	}
	testproc.ReportAlone(t, "in a subprocess", err, out.Bytes())
	return false
}
