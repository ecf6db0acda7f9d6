package bench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// The test binary doubles as the owner process of the kill benchmark: the
// helper "owner".
func init() { testproc.Register("owner", runOwner) }

// tetherExe is the tether binary TestMain built, with tether-guardian
// beside it, the guardian the benchmarks start (see guardian.ProgramFor);
// empty when no benchmark was asked for.
var tetherExe string

// waitLimit bounds every wait for a process to start, exit or be reaped,
// and every teardown the benchmarks wait for.
const waitLimit = 10 * time.Second

// PID 1 here may not reap: a guardian whose owner was killed must be
// adopted by this process, which reaps it, and whatever outlives the
// benchmarks is a failure.
func TestMain(m *testing.M) {
	var dir string
	testproc.Main(m, testproc.Sweep(), testproc.EveryHelperUsed(), testproc.ForBenchmarks(),
		testproc.Before(func() error {
			_, err := punix.BecomeSubreaper()
			return err
		}),
		testproc.Before(func() (err error) {
			dir, err = buildTether()
			return err
		}),
		testproc.After(func() {
			if dir != "" {
				os.RemoveAll(dir)
			}
		}))
}

// buildTether builds the tether binary and tether-guardian into a new
// directory, which it returns, when benchmarks were asked for.
func buildTether() (string, error) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return "", nil
	}
	dir, err := os.MkdirTemp("", "tether-bench-")
	if err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "tether")
	// Measure the binaries as shipped: static, without cgo (see README).
	for _, pkg := range [][2]string{{exe, "github.com/tether-dev/tether"}, {filepath.Join(dir, guardian.ProgramName), "github.com/tether-dev/tether/guardian/cmd/tether-guardian"}} {
		build := exec.Command("go", "build", "-o", pkg[0], pkg[1])
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return dir, fmt.Errorf("building %s: %w", filepath.Base(pkg[0]), err)
		}
	}
	tetherExe = exe
	return dir, nil
}

// exeEnv names a tether binary for the benchmarks to run instead of the
// one TestMain built: an older build to compare with, or one built with a
// profiling hook (go build -overlay) to see where the time goes. The
// guardian benchmarks run its guardian, the service benchmarks run it as
// the service (and so its guardians too): tether-guardian when there is
// one beside it, else the binary itself as "tether guardian" (a copy of
// tether alone in a directory measures that fallback).
const exeEnv = "TETHER_BENCH_TETHER"

// tetherBinary returns the tether binary the benchmarks run: exeEnv's, or
// the one TestMain built.
func tetherBinary(b *testing.B) string {
	b.Helper()
	if v := os.Getenv(exeEnv); v != "" {
		return v
	}
	if tetherExe == "" {
		b.Fatal("TestMain built no tether binary")
	}
	return tetherExe
}
