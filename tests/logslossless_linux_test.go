package tests

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/logfile"
)

// millionLines is how many numbered lines a lossless-log test writes.
const millionLines = 1000000

// numberedYAML is agent n writing the lines 1 to millionLines, one
// write each (bash's echo), through a 256 KiB rotation that keeps every
// file; then it touches <done> and sleeps. done carries the test's marker.
func numberedYAML(bash, done string, extra string) string {
	return fmt.Sprintf(`  - id: n
    command: [%s, -c, 'for ((i=1; i<=%d; i++)); do echo $i; done; touch "$0"; exec sleep 1000', %s]
    autostart: true
    restart: never
    stop_timeout: 2s
    logs: {max_size: 256KiB, keep: 1000}
%s`, bash, millionLines, done, extra)
}

// stdoutLines returns the agent's lines in the log at path, across its
// files in order, without the guardian's own.
func stdoutLines(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, p := range logfile.Files(path) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if _, own := logline.Message(s.Text()); !own {
				out = append(out, logfile.Parse(s.Bytes()).Text)
			}
		}
		f.Close()
	}
	return out
}

// logSize is the size of the log at path, its rotated files included.
func logSize(path string) int64 {
	var n int64
	for _, p := range logfile.Files(path) {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// wholeLog waits until the agent wrote its last line and the log holds
// it, then checks that every line is there once, in order (I11).
func wholeLog(t *testing.T, done, log string) {
	t.Helper()
	// Looked at every 50 ms: a tighter poll takes the CPU the writer needs.
	if !testproc.UntilEvery(5*time.Minute, 50*time.Millisecond, func() bool { return !gone(done) }) {
		t.Fatal("the agent did not finish writing its lines")
	}
	var lines []string
	if !testproc.UntilEvery(30*time.Second, 50*time.Millisecond, func() bool {
		lines = stdoutLines(t, log)
		return len(lines) > 0 && lines[len(lines)-1] == strconv.Itoa(millionLines)
	}) {
		t.Fatalf("the log's last line is not %d: %d lines", millionLines, len(lines))
	}
	if len(lines) != millionLines {
		t.Errorf("%d lines, want %d", len(lines), millionLines)
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q, want %d: a line lost, duplicated or out of order", i+1, l, i+1)
		}
	}
	for _, p := range logfile.Files(log) {
		if fi, _ := os.Stat(p); fi.Size() > 256<<10 {
			t.Errorf("%s has %d bytes, over max_size", filepath.Base(p), fi.Size())
		}
	}
}

func gone(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}

// I11 across a hot upgrade: the agent writes a million lines while the
// service upgrades itself twice; every line is in the log once, in order.
func TestLogLosesNothingAcrossUpgrade(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	done := filepath.Join(w.dir, m+"-done")
	w.writeConfig("agents:\n" + numberedYAML(bash, done, ""))
	svc := w.startService("default")
	w.waitState("default", "n", api.StateRunning)
	log := filepath.Join(w.dir, "state", "tether", "default", "logs", "n.log")
	for round := range 2 {
		at := int64(round+1) * (1 << 20)
		testproc.Eventually(t, 2*time.Minute, func() bool { return logSize(log) > at }, "the agent wrote nothing")
		if r := w.run(time.Minute, "service", "upgrade"); r.code != 0 {
			t.Fatalf("service upgrade: exit %d: %s%s\nservice log:\n%s", r.code, r.stdout, r.stderr, svc.output())
		}
		if !gone(done) {
			t.Logf("round %d: the agent had written all its lines before the upgrade ended", round)
		}
	}
	wholeLog(t, done, log)
	w.mustRun("stop", "n")
}

// I11 across a crash: the service is SIGKILLed while the agent writes; its
// guardian, with survive_service_crash, goes on writing the log, and the
// relaunched service adopts it. Every line is there once, in order.
func TestLogLosesNothingAcrossServiceCrash(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	done := filepath.Join(w.dir, m+"-done")
	w.writeConfig("agents:\n" + numberedYAML(bash, done, "    survive_service_crash: 5m\n"))
	svc := w.startService("default")
	before := w.waitState("default", "n", api.StateRunning)
	log := filepath.Join(w.dir, "state", "tether", "default", "logs", "n.log")
	testproc.Eventually(t, 2*time.Minute, func() bool { return logSize(log) > 1<<20 }, "the agent wrote nothing")
	svc.kill()
	// With no service, the guardian goes on writing.
	size := logSize(log)
	if gone(done) {
		testproc.Eventually(t, time.Minute, func() bool { return logSize(log) > size+(256<<10) }, "the log did not grow while no service ran")
	}
	w.startService("default")
	after := w.waitState("default", "n", api.StateRunning)
	if after.PID != before.PID {
		t.Errorf("the agent runs as pid %d after the relaunch, was %d: not adopted", after.PID, before.PID)
	}
	wholeLog(t, done, log)
	w.mustRun("stop", "n")
}

// I11 across a crash without survive_service_crash: the service is
// SIGKILLed while the agent writes as fast as it can, and its guardian
// tears the agent down (a SIGTERM, at which the agent writes a burst of
// lines larger than the pipe holds, a last line, and exits; by a builtin,
// as a process started now would have a SIGTERM of its own) and drains
// the pipe before it exits itself: every line the agent wrote is in the
// log once, whole and in order, its last line last.
func TestLogLosesNothingWhenTheServiceDies(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const burst = 20000 // lines of about 20 bytes: three pipes' worth
	w.writeConfig(fmt.Sprintf(`agents:
  - id: n
    command: [%s, -c, 'trap "printf \"at the end %%d\\n\" {1..%d}; echo end; exit 0" TERM; for ((i=1; ; i++)); do echo $i; done', %s]
    autostart: true
    restart: never
    stop_timeout: 30s
    logs: {max_size: 256KiB, keep: 1000}
`, bash, burst, m))
	svc := w.startService("default")
	w.waitState("default", "n", api.StateRunning)
	log := filepath.Join(w.dir, "state", "tether", "default", "logs", "n.log")
	testproc.Eventually(t, 2*time.Minute, func() bool { return logSize(log) > 1<<20 }, "the agent wrote nothing")
	svc.kill()
	// The guardian, the service's child, is this process's once the
	// service is dead: gone means its teardown and its drain are done.
	if left := reapAdopted(time.Minute); len(left) > 0 {
		t.Fatalf("the guardian still runs a minute after the service's death: %v", left)
	}
	if procs := procsWith(m); len(procs) > 0 {
		t.Fatalf("the agent outlived its guardian: %s", describe(procs))
	}
	lines := stdoutLines(t, log)
	n := len(lines) - burst - 1 // the numbered lines before the SIGTERM
	if n < 1 || lines[len(lines)-1] != "end" {
		t.Fatalf("the agent's last line, written at its SIGTERM, is not the log's last: %d lines, the last %q", len(lines), lines[max(0, len(lines)-3):])
	}
	for i, l := range lines[:len(lines)-1] {
		want := strconv.Itoa(i + 1)
		if i >= n {
			want = "at the end " + strconv.Itoa(i-n+1)
		}
		if l != want {
			t.Fatalf("line %d is %q, want %q: a line lost, duplicated, cut or out of order", i+1, l, want)
		}
	}
	t.Logf("%d numbered lines, then the %d of the SIGTERM and the last", n, burst)
}
