//go:build unix

package unix

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The test binary doubles as every child process the tests need, in the
// manner of os/exec's tests: TETHER_UNIX_TEST_HELPER selects a role and
// TestMain runs it instead of the tests. A helper that should report
// readiness writes one line "TAG PID START" to descriptor 3, a pipe the test
// reads with a deadline; nothing waits for a child by sleeping.
const (
	helperEnv   = "TETHER_UNIX_TEST_HELPER"   // the role to play
	tagEnv      = "TETHER_UNIX_TEST_TAG"      // the tag of the readiness line
	readyEnv    = "TETHER_UNIX_TEST_READY"    // "1" when descriptor 3 is the readiness pipe
	isolatedEnv = "TETHER_UNIX_TEST_ISOLATED" // name of the test a fresh test binary runs alone
)

// helperLife bounds the life of every helper, so that nothing a failed or
// killed test run leaves behind lives on for long.
const helperLife = 60 * time.Second

// waitLimit bounds every wait for a process to start, exit or be reaped.
const waitLimit = 10 * time.Second

// subreaper reports whether the test process is a child subreaper, so
// double-forked helpers come back to it (Linux only).
var subreaper bool

// godebug is GODEBUG as the test process found it; helpers get it back.
var godebug, haveGodebug = os.LookupEnv("GODEBUG")

func init() {
	if os.Getenv(helperEnv) == "" {
		// As in os/exec's tests: an exec.Cmd started but never waited
		// for panics when the collector finds it.
		v := "execwait=2"
		if godebug != "" {
			v = godebug + "," + v
		}
		os.Setenv("GODEBUG", v)
	}
	if os.Getenv(helperEnv) == "zombie-leader" {
		// Called from init, this keeps the main goroutine, and so the
		// helper, on the main thread, the thread group leader.
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role, os.Args[1:]))
	}
	// PID 1 on the machines this runs on may not reap: orphans must come
	// back here, where they are reaped and counted.
	var err error
	subreaper, err = BecomeSubreaper()
	if err != nil {
		fmt.Fprintln(os.Stderr, "BecomeSubreaper:", err)
		os.Exit(1)
	}
	code := m.Run()
	// Give the execwait finalizers their chance.
	runtime.GC()
	runtime.GC()
	if leaked := killLeftovers(); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d process(es) outlived the tests and were killed:\n", len(leaked))
		for _, p := range leaked {
			fmt.Fprintf(os.Stderr, "\tpid %d (ppid %d, state %c): %s\n", p.Pid, p.PPid, p.State, p.cmdline)
		}
		code = 1
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: goroutines leaked:", err)
		code = 1
	}
	os.Exit(code)
}

// killLeftovers kills every live descendant of the test process, reaps
// every zombie child, and returns the live ones it found: each is a leak.
// It runs after all tests, when nothing else waits for children.
func killLeftovers() []leak {
	self := os.Getpid()
	seen := make(map[Ref]bool)
	var leaked []leak
	deadline := time.Now().Add(waitLimit)
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
		}
		procs, err := Processes()
		if err != nil {
			return leaked
		}
		pending := false
		for _, p := range Descendants(procs, self) {
			pending = true
			if p.Zombie() {
				continue
			}
			if !seen[p.Ref()] {
				seen[p.Ref()] = true
				leaked = append(leaked, leak{p, cmdline(p.Pid)})
			}
			if h, err := OpenHandle(p.Ref()); err == nil {
				_ = h.Signal(syscall.SIGKILL)
				h.Close()
			}
		}
		if !pending || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(time.Millisecond)
	}
}

type leak struct {
	Proc
	cmdline string
}

// cmdline describes a process by its arguments and, for a helper, its role.
func cmdline(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid)
	b, _ := os.ReadFile(dir + "/cmdline")
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	env, _ := os.ReadFile(dir + "/environ")
	for kv := range strings.SplitSeq(string(env), "\x00") {
		if role, ok := strings.CutPrefix(kv, helperEnv+"="); ok {
			s += " (helper " + role + ")"
		}
	}
	return s
}

// runHelper plays one helper role and returns the exit code.
func runHelper(role string, args []string) int {
	time.AfterFunc(helperLife, func() { os.Exit(98) })
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
	case "enter-scope":
		// Enters the scope unit args[0] of the user manager on the
		// session bus of its environment and prints the cgroup it is
		// in then, and the one NewCgroup makes below it.
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		begin := time.Now()
		if err := EnterScope(ctx, SessionBusAddress(os.LookupEnv), args[0], "tether platform test"); err != nil {
			fmt.Println("error", err)
			return 1
		}
		own, err := OwnCgroupDir()
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		cg, err := NewCgroup("child")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		took := time.Since(begin)
		fmt.Println(own)
		fmt.Println(cg.Path)
		fmt.Println(took)
		if err := cg.Remove(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		return 0
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
	if os.Getenv(readyEnv) != "1" {
		return
	}
	p, err := Stat(os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, "announce:", err)
		os.Exit(3)
	}
	// One write of less than PIPE_BUF bytes: lines of several writers
	// never interleave.
	line := fmt.Sprintf("%s %d %d\n", os.Getenv(tagEnv), p.Pid, p.Start)
	if _, err := unix.Write(3, []byte(line)); err != nil {
		fmt.Fprintln(os.Stderr, "announce:", err)
		os.Exit(3)
	}
}

// spawnHelper is how a helper starts another helper, passing its own
// readiness pipe on as descriptor 3 and extra as 4, 5, ...
func spawnHelper(role, tag string, args []string, attr *syscall.SysProcAttr, wait bool, extra ...*os.File) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = helperEnviron(role, tag, os.Getenv(readyEnv) == "1")
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	var ready *os.File
	if os.Getenv(readyEnv) == "1" {
		ready = os.NewFile(3, "ready")
	}
	cmd.ExtraFiles = append([]*os.File{ready}, extra...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(3)
	}
	if wait {
		go func() { _ = cmd.Wait() }()
	}
}

// helperEnviron is the environment of a helper child.
func helperEnviron(role, tag string, ready bool) []string {
	env := append(childEnviron(), helperEnv+"="+role, tagEnv+"="+tag)
	if ready {
		env = append(env, readyEnv+"=1")
	}
	return env
}

// childEnviron is the environment of the test process without the helper
// settings. It keeps the caller's race detector options but drops the
// second a race-enabled binary otherwise sleeps at exit, so that helpers
// exit as promptly under -race as without it.
func childEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case helperEnv, tagEnv, readyEnv, isolatedEnv, "GORACE", "GODEBUG":
			continue
		}
		env = append(env, kv)
	}
	if haveGodebug {
		env = append(env, "GODEBUG="+godebug)
	}
	race := "atexit_sleep_ms=0"
	if old := os.Getenv("GORACE"); old != "" {
		race = old + " " + race
	}
	return append(env, "GORACE="+race)
}

func testExecutable(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// readyPipe collects the readiness lines of a test's helpers.
type readyPipe struct {
	r, w *os.File
	br   *bufio.Reader
	seen map[string]Ref
}

func newReadyPipe(t testing.TB) *readyPipe {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return &readyPipe{r: r, w: w, br: bufio.NewReader(r), seen: make(map[string]Ref)}
}

// wait returns the processes that announced tags, reading until each has
// announced or the deadline passes.
func (rp *readyPipe) wait(t testing.TB, tags ...string) map[string]Ref {
	t.Helper()
	if err := rp.r.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]Ref, len(tags))
	for _, tag := range tags {
		for {
			if r, ok := rp.seen[tag]; ok {
				out[tag] = r
				break
			}
			line, err := rp.br.ReadString('\n')
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
	ready *readyPipe // descriptor 3 when set
	extra []*os.File // descriptors 4, 5, ...
	attr  *syscall.SysProcAttr
}

// startHelper starts a helper with os/exec. It is killed and waited for
// when the test ends, whatever the outcome.
func startHelper(t testing.TB, role string, o helperOpts) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(testExecutable(t), o.args...)
	cmd.Env = helperEnviron(role, o.tag, o.ready != nil)
	cmd.SysProcAttr = o.attr
	cmd.Stderr = os.Stderr
	var ready *os.File
	if o.ready != nil {
		ready = o.ready.w
	}
	cmd.ExtraFiles = append([]*os.File{ready}, o.extra...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	})
	return cmd
}

// startSession starts a helper with StartSession, which leaves reaping to
// the caller: the test reaps it by pid, or a Reaper does. It is killed
// when the test ends.
func startSession(t testing.TB, role string, o helperOpts, cg *Cgroup) (int, error) {
	t.Helper()
	spec := SpawnSpec{
		Path:   testExecutable(t),
		Argv:   append([]string{testExecutable(t)}, o.args...),
		Env:    helperEnviron(role, o.tag, o.ready != nil),
		Stderr: os.Stderr,
		Cgroup: cg,
	}
	var ready *os.File
	if o.ready != nil {
		ready = o.ready.w
	}
	spec.Extra = append([]*os.File{ready}, o.extra...)
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
	deadline := time.Now().Add(waitLimit)
	for {
		p, err := Stat(r.Pid)
		if err != nil || p.Start != r.Start {
			return 0, false
		}
		if p.Zombie() && p.PPid == os.Getpid() {
			var ws unix.WaitStatus
			got, err := unix.Wait4(r.Pid, &ws, unix.WNOHANG, nil)
			if err == nil && got == r.Pid {
				return ws, true
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("process %d (state %c, ppid %d) was not gone after %v", r.Pid, p.State, p.PPid, waitLimit)
			return 0, false
		}
		time.Sleep(time.Millisecond)
	}
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

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitLimit, what)
		}
		time.Sleep(time.Millisecond)
	}
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
	cmd := exec.CommandContext(ctx, testExecutable(t),
		"-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v", "-test.timeout=60s")
	cmd.Env = append(childEnviron(), isolatedEnv+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	for _, undo := range afterIsolated {
		undo(t, cmd.Process.Pid)
	}
	switch {
	case err != nil:
		t.Fatalf("%s in a subprocess: %v\n%s", t.Name(), err, out.Bytes())
	case bytes.Contains(out.Bytes(), []byte("--- SKIP: "+t.Name()+" ")):
		t.Skipf("skipped in the subprocess:\n%s", out.Bytes())
	case !bytes.Contains(out.Bytes(), []byte("--- PASS: "+t.Name()+" ")):
		t.Fatalf("%s did not run in the subprocess:\n%s", t.Name(), out.Bytes())
	case testing.Verbose():
		t.Logf("subprocess output:\n%s", out.Bytes())
	}
	return false
}
