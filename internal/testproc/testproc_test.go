package testproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// unusedEnv makes a run of the tests register a helper that no test
// starts (TestEveryHelperUsed); set to "bench", it also says that the
// helpers serve benchmarks.
const unusedEnv = "TESTPROC_TEST_UNUSED_HELPER"

func TestMain(m *testing.M) {
	opts := []Option{Sweep(), NoLeaks(), EveryHelperUsed()}
	if v := os.Getenv(unusedEnv); v != "" && Name() == "" {
		Register("never", func([]string) int { return 0 })
		if v == "bench" {
			opts = append(opts, ForBenchmarks())
		}
	}
	Main(m, opts...)
}

func init() {
	Register("exit", func(args []string) int {
		n, _ := strconv.Atoi(args[0])
		return n
	})
	Register("args", func(args []string) int {
		fmt.Print(strings.Join(args, "|"))
		return 0
	})
	// announce announces args[0] and waits for its stdin to close.
	Register("announce", func(args []string) int {
		if err := Announce(args[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	})
	// relay starts "announce args[0]" on its own stdin, passing its
	// readiness pipe on, and announces args[1] once that child has exited.
	Register("relay", func(args []string) int {
		cmd := Command("announce", args[0])
		PassOn(cmd)
		cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := Announce(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	})
	// env prints whether the readiness pipe's name is in the environment.
	Register("env", func([]string) int {
		_, ok := os.LookupEnv(readyEnv)
		fmt.Print(ok)
		return 0
	})
}

func TestCommandRunsHelper(t *testing.T) {
	out, err := Command("args", "a b", "", "-c").Output()
	if err != nil || string(out) != "a b||-c" {
		t.Fatalf("args helper: %q, %v", out, err)
	}
	err = Command("exit", "7").Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 7 {
		t.Fatalf("exit helper: %v, want exit status 7", err)
	}
}

func TestUnknownHelper(t *testing.T) {
	var stderr strings.Builder
	cmd := exec.Command(Executable(), "no-such-helper")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), `"no-such-helper"`) {
		t.Fatalf("unknown helper: %v %q, want exit status 2 naming it", err, stderr.String())
	}
}

func TestRegisterRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "-x", "exit"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, nil)
		}()
	}
	defer func() {
		if recover() == nil {
			t.Error("Command of an unregistered helper did not panic")
		}
	}()
	Command("not-registered")
}

// startAnnouncer starts the helper name with args on rp; closing the
// returned pipe lets it exit.
func startAnnouncer(t *testing.T, rp *Ready, name string, args ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := Command(name, args...)
	cmd.Stderr = os.Stderr
	rp.Pass(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	Start(t, cmd)
	return cmd, stdin
}

func TestReadyLines(t *testing.T) {
	rp := NewReady(t)
	cmd, in := startAnnouncer(t, rp, "announce", "first")
	if line, err := rp.Line(20 * time.Second); err != nil || line != "first" {
		t.Fatalf("Line = %q, %v; want first", line, err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// A grandchild announces through the pipe its parent passed on.
	relay, stdin := startAnnouncer(t, rp, "relay", "grandchild", "child")
	for _, want := range []string{"grandchild", "child"} {
		if line, err := rp.Line(20 * time.Second); err != nil || line != want {
			t.Fatalf("Line = %q, %v; want %s", line, err, want)
		}
		stdin.Close()
	}
	if err := relay.Wait(); err != nil {
		t.Fatal(err)
	}
	if line, err := rp.Line(10 * time.Millisecond); err == nil {
		t.Fatalf("Line with nothing announced = %q, want an error", line)
	}
}

// A helper's own children are told of no readiness pipe unless it passes
// it on.
func TestReadyNotInheritedUnpassed(t *testing.T) {
	rp := NewReady(t)
	cmd := Command("env")
	rp.Pass(cmd)
	if out, err := cmd.Output(); err != nil || string(out) != "false" {
		t.Fatalf("env helper: %q, %v; want false", out, err)
	}
}

func TestAnnounceWithoutPipe(t *testing.T) {
	if err := Announce("nobody listens"); err != nil {
		t.Fatal(err)
	}
}

func TestUntil(t *testing.T) {
	n := 0
	if !Until(10*time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Until returned after %d calls, want 3", n)
	}
	begin := time.Now()
	if Until(20*time.Millisecond, func() bool { return false }) {
		t.Error("Until of a condition that never holds returned true")
	}
	if d := time.Since(begin); d < 20*time.Millisecond {
		t.Errorf("Until gave up after %v, before 20ms", d)
	}
	calls := 0
	UntilEvery(50*time.Millisecond, 20*time.Millisecond, func() bool { calls++; return false })
	if calls > 4 {
		t.Errorf("UntilEvery every 20ms checked %d times in 50ms", calls)
	}
}

// recorder is a testing.TB that records a Fatalf instead of failing.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	r := &recorder{TB: t}
	Eventually(r, 10*time.Second, func() bool { return true }, "never")
	if r.fatal != "" {
		t.Errorf("Eventually of a condition that holds failed: %s", r.fatal)
	}
	Eventually(r, time.Millisecond, func() bool { return false }, "waited for %s", "nothing")
	if r.fatal != "waited for nothing" {
		t.Errorf("Eventually failed with %q, want %q", r.fatal, "waited for nothing")
	}
}

// A run of every test that never starts one of its helpers fails, naming
// it; this package's own run, which starts each of its helpers, passes.
func TestEveryHelperUsed(t *testing.T) {
	if os.Getenv(unusedEnv) != "" {
		t.Skip("the run this test started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Executable())
	cmd.Env = append(Environ(), unusedEnv+"=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Fatalf("a run with an unused helper: %v, want exit status 1\n%s", err, out)
	}
	if want := "no test started the helper(s) never:"; !strings.Contains(string(out), want) {
		t.Errorf("the run says\n%s\nwant a line with %q", out, want)
	}
}

// With ForBenchmarks, a run of every benchmark that never starts one of
// the helpers fails, naming it, whatever -run says; a run that runs no
// benchmark checks nothing.
func TestEveryHelperUsedForBenchmarks(t *testing.T) {
	if os.Getenv(unusedEnv) != "" {
		t.Skip("the run this test started")
	}
	run := func(args ...string) ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, Executable(), args...)
		cmd.Env = append(Environ(), unusedEnv+"=bench")
		return cmd.CombinedOutput()
	}
	out, err := run("-test.run=^$", "-test.bench=.")
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Fatalf("a run of every benchmark with an unused helper: %v, want exit status 1\n%s", err, out)
	}
	if !regexp.MustCompile(`no test started the helper\(s\) .*\bnever\b`).Match(out) {
		t.Errorf("the run says\n%s\nwant a line naming the helper never", out)
	}
	if out, err := run("-test.run=^TestUntil$"); err != nil {
		t.Errorf("a run of no benchmark: %v, want success\n%s", err, out)
	}
}
