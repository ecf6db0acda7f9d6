package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// BenchmarkExecStart measures what a start of each of tether's programs
// costs, from just before the exec until it has been reaped. The
// programs return at once from main, so what is measured is the exec,
// the runtime's start, the package initializers and the exit:
//
//   - own: the guardian's own executable (tether-guardian beside the
//     tether binary), run by hand, which says it is not meant to be;
//   - fallback: the tether binary run as "tether guardian", the same;
//   - version: "tether version", the command line's start.
//
// The guardians get the environment the service gives them, the command
// line the benchmark's. Each iteration runs each program once in turn, so whatever else loads
// the machine weighs on each alike, and once more each with
// GODEBUG=inittrace=1, whose lines are summed. Metrics, for each P of
// own, fallback and version: P-p50-ms (wall), P-cpu-ms (the median user
// and system CPU time), P-init-ms (the median sum of the initializers'
// clock times), P-init-kB and P-inits (what the initializers allocated,
// and how many ran).
func BenchmarkExecStart(b *testing.B) {
	exe := tetherBinary(b)
	own := guardian.ProgramFor(exe)
	if own.Tether {
		b.Fatalf("no %s beside %s", guardian.ProgramName, exe)
	}
	// A guardian gets the environment the service gives it, and run by
	// hand it exits 2; the command line gets the caller's.
	guardianEnv := []string{"GOMAXPROCS=1"}
	progs := []struct {
		name string
		argv []string
		env  []string
		exit int
	}{
		{"own", []string{own.Path}, guardianEnv, 2},
		{"fallback", []string{exe, "guardian"}, guardianEnv, 2},
		{"version", []string{exe, "version"}, os.Environ(), 0},
	}
	wall := make([][]time.Duration, len(progs))
	cpu := make([][]time.Duration, len(progs))
	traces := make([][]initTrace, len(progs))
	for b.Loop() {
		for i, p := range progs {
			w, c, _, err := runOnce(p.argv, p.env, p.exit, false)
			if err != nil {
				b.Fatal(err)
			}
			wall[i] = append(wall[i], w)
			cpu[i] = append(cpu[i], c)
		}
		b.StopTimer()
		for i, p := range progs {
			_, _, tr, err := runOnce(p.argv, p.env, p.exit, true)
			if err != nil {
				b.Fatal(err)
			}
			traces[i] = append(traces[i], tr)
		}
		b.StartTimer()
	}
	for i, p := range progs {
		b.ReportMetric(millis(quantile(wall[i], 0.5)), p.name+"-p50-ms")
		b.ReportMetric(millis(quantile(cpu[i], 0.5)), p.name+"-cpu-ms")
		var clock []float64
		for _, tr := range traces[i] {
			clock = append(clock, tr.ms)
		}
		last := traces[i][len(traces[i])-1]
		b.ReportMetric(quantile(clock, 0.5), p.name+"-init-ms")
		b.ReportMetric(float64(last.bytes)/1024, p.name+"-init-kB")
		b.ReportMetric(float64(last.count), p.name+"-inits")
	}
}

// initTrace is the sum of a run's GODEBUG=inittrace=1 lines.
type initTrace struct {
	count int
	ms    float64
	bytes int64
}

// runOnce runs argv with env (and inittrace, when trace), expecting
// exit status exit, and returns its wall and CPU time and, with trace,
// its initializers.
func runOnce(argv, env []string, exit int, trace bool) (time.Duration, time.Duration, initTrace, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	if trace {
		cmd.Env = append(slices.Clone(env), "GODEBUG=inittrace=1")
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	begin := time.Now()
	err := cmd.Run()
	took := time.Since(begin)
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == exit {
		err = nil
	}
	if err == nil && cmd.ProcessState.ExitCode() != exit {
		err = fmt.Errorf("exit status %d, want %d", cmd.ProcessState.ExitCode(), exit)
	}
	if err != nil {
		return 0, 0, initTrace{}, fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.Bytes())
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	var c time.Duration
	if ru != nil {
		c = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var tr initTrace
	if trace {
		var perr error
		if tr, perr = parseInitTrace(stderr.String()); perr != nil {
			return 0, 0, tr, fmt.Errorf("%s: %v", filepath.Base(argv[0]), perr)
		}
	}
	return took, c, tr, nil
}

// parseInitTrace sums lines such as "init os @2.7 ms, 0.075 ms clock, 416
// bytes, 9 allocs".
func parseInitTrace(s string) (initTrace, error) {
	var tr initTrace
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[6] != "clock," || f[8] != "bytes," {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		n, err2 := strconv.ParseInt(f[7], 10, 64)
		if err1 != nil || err2 != nil {
			return tr, fmt.Errorf("inittrace line %q", line)
		}
		tr.count++
		tr.ms += ms
		tr.bytes += n
	}
	if tr.count == 0 {
		return tr, errors.New("no inittrace lines")
	}
	return tr, nil
}
