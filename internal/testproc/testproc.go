// Package testproc is the helper-process harness of the tests, after
// os/exec's own: the test binary re-executed as a named helper (Register,
// Command, Argv, dispatched by Main from TestMain, and EveryHelperUsed
// failing a run that never starts one), a readiness pipe over
// which helpers say they are up (Ready, Announce), the sweep of processes
// that outlived the tests (Sweep), and one way to wait for a condition
// with a deadline (Eventually, Until), and a buffer a process's output
// goes to while the test reads it (Buffer). Only test files import it; it
// imports neither platform package, whose own tests use it.
//
// A helper process is the test binary run as "BINARY NAME ARGS...": a
// first argument that is not a flag names a helper, so a command line for
// a helper can go wherever a command line goes (a guardian Spec, a
// platform SpawnSpec, an agent in a config file), and the guardian that
// tether re-executes as "tether guardian" is a helper like any other.
//
// Per-OS test files follow one rule: a file for one system says so in its
// name (_linux_test.go, _windows_test.go, or _unix_test.go for all of
// Unix) and has a //go:build line only where Go does not read the name,
// //go:build unix in a _unix_test.go; a file for another set of systems
// (linux || windows, !linux) has no system in its name and says the set
// in its //go:build line.
package testproc

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Life bounds the life of every helper unless Main is given another: a
// helper that a failed or killed test run leaves behind exits by itself
// (with LifeExit) after that long.
const Life = 2 * time.Minute

// LifeExit is the exit code of a helper that outlived its bound.
const LifeExit = 99

var helpers = map[string]func(args []string) int{}

// Register makes name a helper: the test binary started as "BINARY NAME
// ARGS..." runs f(ARGS) instead of the tests and exits with its result.
// Call it from an init function. A name is not empty and does not begin
// with '-', which would make it a flag of the test binary.
func Register(name string, f func(args []string) int) {
	if name == "" || strings.HasPrefix(name, "-") {
		panic(fmt.Sprintf("testproc: bad helper name %q", name))
	}
	if _, dup := helpers[name]; dup {
		panic(fmt.Sprintf("testproc: helper %q registered twice", name))
	}
	helpers[name] = f
}

// Name returns the helper this process runs as, or "" in the test
// process. It can be called from init functions.
func Name() string {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		return ""
	}
	return os.Args[1]
}

// An Option adds to what Main does around the tests. Options run in the
// test process only, never in a helper.
type Option func(*run)

type run struct {
	life   time.Duration
	before []func() error
	after  []func()
	sweep  bool
	leaks  []goleak.Option
	check  bool
	used   bool
	bench  bool
}

// HelperLife bounds the life of every helper at d instead of Life.
func HelperLife(d time.Duration) Option { return func(r *run) { r.life = d } }

// Before runs f before the tests; an error ends the run, failed.
func Before(f func() error) Option { return func(r *run) { r.before = append(r.before, f) } }

// After runs f after the tests and the checks, and also when a Before
// function failed.
func After(f func()) Option { return func(r *run) { r.after = append(r.after, f) } }

// Sweep makes the test process check that it waits for every child and
// leaves no process behind: it runs with GODEBUG=execwait=2 (an exec.Cmd
// started and never waited for panics when the collector finds it, as in
// os/exec's tests), and after the tests every live descendant is killed
// and the run fails, naming each. Helpers get GODEBUG back as it was.
func Sweep() Option { return func(r *run) { r.sweep = true } }

// NoLeaks fails a run whose tests passed but left goroutines behind
// (goleak.Find with opts).
func NoLeaks(opts ...goleak.Option) Option {
	return func(r *run) { r.check, r.leaks = true, opts }
}

// EveryHelperUsed fails a run of every test (no -run, -skip, -list or
// -short) in which a registered helper was never started: a helper no
// test starts is dead code, as os/exec's tests say of theirs. A helper
// counts as started when a test asked Argv or Command for its command
// line, or told Used of a start of its own.
func EveryHelperUsed() Option { return func(r *run) { r.used = true } }

// ForBenchmarks says the package's helpers serve its benchmarks: the
// check of EveryHelperUsed then applies to a run of every benchmark
// (-bench . or -bench '.*', no -skip, -list or -short), whatever -run
// says, and not to a run of the tests alone, which starts none of them.
func ForBenchmarks() Option { return func(r *run) { r.bench = true } }

// Used records that a test starts the helper name by a way of its own (a
// copy of the test binary, the code under test re-executing itself).
func Used(name string) {
	if _, ok := helpers[name]; !ok {
		panic(fmt.Sprintf("testproc: no helper %q is registered", name))
	}
	used.Store(name, true)
}

// used holds the names of the helpers a test asked for.
var used sync.Map

// unused returns the registered helpers no test asked for, sorted.
func unused() []string {
	var out []string
	for name := range helpers {
		if _, ok := used.Load(name); !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// unfiltered reports whether this run runs every test, or with bench
// every benchmark.
func unfiltered(bench bool) bool {
	flags := []string{"test.run", "test.skip", "test.list"}
	if bench {
		f := flag.Lookup("test.bench")
		if f == nil || f.Value.String() != "." && f.Value.String() != ".*" {
			return false
		}
		flags = flags[1:]
	}
	for _, name := range flags {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// Main is the whole of a TestMain. In a helper process it runs the helper
// and exits with its code, an unknown name exiting 2; in the test process
// it runs the Before functions, the tests, the checks the options ask for
// and the After functions, and exits with the tests' code, or 1 when
// anything else failed.
func Main(m *testing.M, opts ...Option) {
	r := run{life: Life}
	for _, o := range opts {
		o(&r)
	}
	if name := Name(); name != "" {
		f, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "testproc: unknown helper %q\n", name)
			os.Exit(2)
		}
		time.AfterFunc(r.life, func() { os.Exit(LifeExit) })
		takeReady()
		os.Exit(f(os.Args[2:]))
	}
	os.Exit(r.tests(m))
}

func (r *run) tests(m *testing.M) int {
	defer func() {
		for _, f := range r.after {
			f()
		}
	}()
	if r.sweep {
		setExecWait()
	}
	for _, f := range r.before {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, "setting up the test process:", err)
			return 1
		}
	}
	code := m.Run()
	if r.sweep {
		// Give the execwait finalizers their chance.
		runtime.GC()
		runtime.GC()
		if left := sweep(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: %d process(es) outlived the tests and were killed:\n", len(left))
			for _, p := range left {
				fmt.Fprintf(os.Stderr, "\t%s\n", p)
			}
			code = 1
		}
	}
	if r.used && code == 0 && unfiltered(r.bench) {
		if names := unused(); len(names) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test started the helper(s) %s: remove them, or say testproc.Used where a test starts one its own way\n", strings.Join(names, ", "))
			code = 1
		}
	}
	if r.check && code == 0 {
		if err := goleak.Find(r.leaks...); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: goroutines leaked:", err)
			code = 1
		}
	}
	return code
}

// godebug is GODEBUG as the test process found it; helpers get it back.
var godebug, haveGodebug = os.LookupEnv("GODEBUG")

func setExecWait() {
	v := "execwait=2"
	if godebug != "" {
		v = godebug + "," + v
	}
	os.Setenv("GODEBUG", v)
}

// Environ is the environment for a helper: this process's, without the
// readiness pipe it may have inherited and with GODEBUG as the test
// process found it, and with GORACE told not to sleep at exit (a binary
// built with -race otherwise sleeps a second), so helpers exit as
// promptly under -race as without it.
func Environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case readyEnv, "GORACE", "GODEBUG":
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

var executable = sync.OnceValues(os.Executable)

// Executable is the path of the test binary.
func Executable() string {
	exe, err := executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}

// Argv is the command line that runs the helper name with args, for
// starts that are not os/exec's. It panics when no helper is registered
// under name.
func Argv(name string, args ...string) []string {
	Used(name)
	return append([]string{Executable(), name}, args...)
}

// Command returns a command that runs the helper name with args and the
// environment Environ. It panics when no helper is registered under name.
func Command(name string, args ...string) *exec.Cmd {
	argv := Argv(name, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = Environ()
	return cmd
}

// Start starts cmd, and kills and waits for it when the test ends,
// whatever the outcome. A test may wait for it itself first, but not from
// a goroutine still waiting when the test ends.
func Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}
