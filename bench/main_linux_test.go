//go:build linux

package bench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The test binary doubles as the owner process of the kill benchmark, in
// the manner of os/exec's tests: with helperEnv set to "owner", TestMain
// runs runOwner instead of the benchmarks.
const helperEnv = "TETHER_BENCH_HELPER"

// tetherExe is the tether binary TestMain built, the guardian the
// benchmarks start; empty when no benchmark was asked for.
var tetherExe string

// waitLimit bounds every wait for a process to start, exit or be reaped,
// and every teardown the benchmarks wait for.
const waitLimit = 10 * time.Second

func init() {
	if os.Getenv(helperEnv) == "" {
		// As in os/exec's tests: an exec.Cmd started but never waited
		// for panics when the collector finds it.
		v := "execwait=2"
		if g := os.Getenv("GODEBUG"); g != "" {
			v = g + "," + v
		}
		os.Setenv("GODEBUG", v)
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		if role != "owner" {
			fmt.Fprintf(os.Stderr, "bench helper: unknown role %q\n", role)
			os.Exit(2)
		}
		os.Exit(runOwner())
	}
	os.Exit(drive(m))
}

func drive(m *testing.M) int {
	flag.Parse()
	// PID 1 here may not reap: a guardian whose owner was killed must be
	// adopted by this process, which reaps it.
	if _, err := punix.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: becoming a child subreaper:", err)
		return 1
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		dir, err := os.MkdirTemp("", "tether-bench-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		exe := filepath.Join(dir, "tether")
		// Measure the binary as shipped: static, without cgo (see README).
		build := exec.Command("go", "build", "-o", exe, "github.com/tether-dev/tether")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: building tether:", err)
			return 1
		}
		tetherExe = exe
	}
	code := m.Run()
	// Give the execwait finalizers their chance.
	runtime.GC()
	runtime.GC()
	if left := killLeftovers(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d process(es) outlived the benchmarks and were killed:\n", len(left))
		for _, p := range left {
			fmt.Fprintf(os.Stderr, "\tpid %d (ppid %d, session %d, state %c): %s\n", p.Pid, p.PPid, p.Sid, p.State, comm(p.Pid))
		}
		code = 1
	}
	return code
}

// tetherBinary returns the tether binary TestMain built.
func tetherBinary(b *testing.B) string {
	b.Helper()
	if tetherExe == "" {
		b.Fatal("TestMain built no tether binary")
	}
	return tetherExe
}

// killLeftovers kills every live descendant of the test process and reaps
// every zombie child; it returns the live descendants it found, each a
// leak. It runs after the benchmarks, when nothing else waits for
// children.
func killLeftovers() []punix.Proc {
	self := os.Getpid()
	seen := make(map[punix.Ref]bool)
	var left []punix.Proc
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
		procs, err := punix.Processes()
		if err != nil {
			return left
		}
		live := 0
		for _, p := range punix.Descendants(procs, self) {
			if p.Zombie() {
				continue
			}
			live++
			if !seen[p.Ref()] {
				seen[p.Ref()] = true
				left = append(left, p)
			}
			if h, err := openProc(p.Ref()); err == nil {
				h.kill()
				h.close()
			}
		}
		if live == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(time.Millisecond)
	}
}
