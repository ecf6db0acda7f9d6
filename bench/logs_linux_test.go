package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/logfile"
)

// logRun is how long the writer of BenchmarkLogThroughput writes.
const logRun = 10 * time.Second

// logMaxSize is the rotation size of both loggers: tether's default.
const logMaxSize = logfile.DefaultMaxSize

// BenchmarkLogThroughput runs, one after the other, the same writer of
// numbered lines (seq 1 inf, as fast as it can, for logRun) into tether's
// log, through its guardian with timestamps on (the default), and into
// s6-log t (TAI64N timestamps) with the same rotation size. A logger
// slower than the writer holds it back (the pipe is full), so the lines
// that reach the log in logRun are the logger's throughput.
//
// Metrics: tether-lines/s and s6-lines/s (the last number in the log over
// logRun), tether-cpu-s/Mline and s6-cpu-s/Mline (the logging process's
// user and system CPU time over the run, per million lines: the
// guardian's, and s6-log's). Targets: tether's throughput at least
// s6-log's, its CPU per line at most 1.5 times s6-log's.
func BenchmarkLogThroughput(b *testing.B) {
	if _, err := exec.LookPath("s6-log"); err != nil {
		b.Skip("SKIP: s6-log is not installed (Debian's s6)")
	}
	for b.Loop() {
		tLines, tCPU, err := tetherLogRun(b)
		if err != nil {
			b.Fatal(err)
		}
		sLines, sCPU, err := s6LogRun(b)
		if err != nil {
			b.Fatal(err)
		}
		secs := logRun.Seconds()
		b.ReportMetric(float64(tLines)/secs, "tether-lines/s")
		b.ReportMetric(float64(sLines)/secs, "s6-lines/s")
		b.ReportMetric(tCPU.Seconds()/float64(tLines)*1e6, "tether-cpu-s/Mline")
		b.ReportMetric(sCPU.Seconds()/float64(sLines)*1e6, "s6-cpu-s/Mline")
		b.Logf("tether: %d lines, guardian CPU %v; s6-log: %d lines, CPU %v", tLines, tCPU, sLines, sCPU)
		checkTarget(b, "tether's lines/s against s6-log's, inverted", float64(sLines)/float64(tLines), 1, "times")
		checkTarget(b, "tether's CPU per line against s6-log's", tCPU.Seconds()/float64(tLines)/(sCPU.Seconds()/float64(sLines)), 1.5, "times")
	}
}

// writerScript writes numbered lines for logRun.
var writerScript = fmt.Sprintf("timeout %g seq 1 inf", logRun.Seconds())

// tetherLogRun runs the writer as an agent and returns how many lines its
// log got and the guardian's CPU time meanwhile.
func tetherLogRun(b *testing.B) (int64, time.Duration, error) {
	spec := shellSpec(b, "bench-logs@local")
	spec.Argv = []string{"/bin/sh", "-c", writerScript + "; exec sleep 1000"}
	u := newUndo(b)
	s, err := guardian.Start(context.Background(), spec)
	if err != nil {
		return 0, 0, err
	}
	r := track(u, s)
	defer func() {
		if err := r.stop(); err != nil {
			b.Error(err)
		}
	}()
	gpid := s.Ready().GuardianPID
	before, err := statCPU(gpid)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(logRun)
	// The writer is done: wait until the guardian has written the rest.
	lines, err := settledLast(spec.LogPath, func(l string) string { return logfile.Parse([]byte(l)).Text })
	if err != nil {
		return 0, 0, err
	}
	after, err := statCPU(gpid)
	return lines, after - before, err
}

// s6LogRun pipes the writer into s6-log t and returns how many lines its
// current file got and s6-log's CPU time.
func s6LogRun(b *testing.B) (int64, time.Duration, error) {
	dir := filepath.Join(b.TempDir(), "s6")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	writer := exec.Command("/bin/sh", "-c", writerScript)
	writer.Stdout = w
	logger := exec.Command("s6-log", "t", "s"+strconv.Itoa(logMaxSize), "n5", dir)
	logger.Stdin = r
	if err := logger.Start(); err != nil {
		r.Close()
		w.Close()
		return 0, 0, err
	}
	err = writer.Start()
	r.Close()
	w.Close()
	if err != nil {
		logger.Process.Kill()
		logger.Wait()
		return 0, 0, err
	}
	_ = writer.Wait() // timeout's status: 124
	if err := logger.Wait(); err != nil {
		return 0, 0, fmt.Errorf("s6-log: %w", err)
	}
	cpu := logger.ProcessState.UserTime() + logger.ProcessState.SystemTime()
	lines, err := lastNumber(filepath.Join(dir, "current"), func(l string) string {
		_, text, _ := strings.Cut(l, " ") // after the TAI64N label
		return text
	})
	return lines, cpu, err
}

// settledLast waits until the last number of the log at path stops
// changing, and returns it.
func settledLast(path string, text func(string) string) (int64, error) {
	last := int64(-1)
	deadline := time.Now().Add(waitLimit)
	for {
		n, err := lastNumber(path, text)
		if err == nil && n == last && n > 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the log %s did not settle: %d, then %d (%v)", path, last, n, err)
		}
		last = n
		time.Sleep(200 * time.Millisecond)
	}
}

// lastNumber returns the number the last line of the file at path holds,
// after text takes the label off.
func lastNumber(path string, text func(string) string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 4096 {
		if _, err := f.Seek(-4096, 2); err != nil {
			return 0, err
		}
	}
	var last string
	s := bufio.NewScanner(f)
	for s.Scan() {
		last = s.Text()
	}
	return strconv.ParseInt(strings.TrimSpace(text(last)), 10, 64)
}

// statCPU is the user and system CPU time of process pid, its exited
// threads included (/proc/PID/stat).
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}
