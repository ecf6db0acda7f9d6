package guardian

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/logfile"
	"golang.org/x/sys/unix"
)

// readLog returns the agent's stdout lines in the log at path, across its
// rotated files in order, and the stderr lines apart. Each file must stay
// within max bytes.
func readLog(t *testing.T, path string, max int64, stamped bool) (stdout, stderr []string) {
	t.Helper()
	for _, p := range logfile.Files(path) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := f.Stat(); fi.Size() > max {
			t.Errorf("%s has %d bytes, over the %d of max_size", filepath.Base(p), fi.Size(), max)
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if _, own := logline.Message(s.Text()); own {
				continue
			}
			l := logfile.Parse(s.Bytes())
			if l.Time.IsZero() == stamped {
				t.Errorf("%s: a line with a time %v, want timestamps %v: %q", filepath.Base(p), l.Time, stamped, s.Text())
			}
			if l.Stream == logfile.Stderr {
				stderr = append(stderr, l.Text)
			} else {
				stdout = append(stdout, l.Text)
			}
		}
		f.Close()
	}
	return stdout, stderr
}

// checkNumbered fails unless lines are 1..n, each once, in order.
func checkNumbered(t *testing.T, lines []string, n int) {
	t.Helper()
	if len(lines) != n {
		t.Errorf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q, want %d (lines lost, duplicated or out of order)", i+1, l, i+1)
		}
	}
}

// waitStopped waits for the session's stopped event.
func waitStopped(t *testing.T, e *world, s *Session, within time.Duration) {
	t.Helper()
	for {
		if ev := nextEvent(t, e, s, within); ev.Type == EventStopped {
			return
		}
	}
}

// I11: a million numbered lines through a 256 KiB rotation come out
// exactly once each, in order, across the files; stderr lines are marked.
func TestOutputMillionLinesRotateExactly(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("log@million")
	spec.Argv = []string{"sh", "-c", `seq 1 1000000; echo done >&2`}
	const size = 256 << 10
	spec.Logs = &logfile.Policy{MaxSize: size, Keep: 400, Timestamps: true}
	s := e.start(spec)
	waitStopped(t, e, s, 120*time.Second)
	stdout, stderr := readLog(t, spec.LogPath, size, true)
	checkNumbered(t, stdout, 1000000)
	if len(stderr) != 1 || stderr[0] != "done" {
		t.Errorf("stderr lines %q, want [done]", stderr)
	}
	if n := len(logfile.Files(spec.LogPath)); n < 100 {
		t.Errorf("%d files: the log did not rotate as often as its size says", n)
	}
}

// The old files beyond keep go; the newest stay.
func TestOutputKeep(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("log@keep")
	spec.Argv = []string{"seq", "1", "100000"}
	spec.Logs = &logfile.Policy{MaxSize: 16 << 10, Keep: 3}
	s := e.start(spec)
	waitStopped(t, e, s, 60*time.Second)
	files := logfile.Files(spec.LogPath)
	if len(files) != 4 || files[0] != spec.LogPath+".3" {
		t.Fatalf("files %v, want .3, .2, .1 and the log", files)
	}
	stdout, _ := readLog(t, spec.LogPath, 16<<10, false)
	if len(stdout) == 0 || stdout[len(stdout)-1] != "100000" {
		t.Fatalf("the last line kept is not the last written")
	}
	first, _ := strconv.Atoi(stdout[0])
	for i, l := range stdout {
		if l != strconv.Itoa(first+i) {
			t.Fatalf("line %q after %d", l, first+i-1)
		}
	}
}

// An agent that writes faster than its log is written is held back by
// the pipe, not cut: with the guardian stopped (SIGSTOP), the agent
// blocks in its write; continued, every line arrives.
func TestOutputBackPressure(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("log@pressure")
	spec.Argv = []string{"sh", "-c", `while [ ! -e "$HELPER_DIR/go" ]; do sleep 0.01; done; seq 1 200000; touch "$HELPER_DIR/wrote"; exec sleep 1000`}
	spec.Logs = &logfile.Policy{MaxSize: 256 << 10, Keep: 100, Timestamps: true}
	s := e.start(spec)
	gpid, apid := s.Ready().GuardianPID, s.Ready().AgentPID
	if err := unix.Kill(gpid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(gpid, unix.SIGCONT)
	if err := os.WriteFile(filepath.Join(e.helper, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// seq, the shell's child, waits in the kernel's pipe_write.
	blocked := func() bool {
		ms, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, m := range ms {
			stat, err := os.ReadFile(m)
			if err != nil || !strings.Contains(string(stat), ") ") {
				continue
			}
			f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
			if pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(m))); len(f) > 1 && f[1] == strconv.Itoa(apid) && inPipeWrite(pid) {
				return true
			}
		}
		return false
	}
	testproc.Eventually(t, 10*time.Second, blocked, "the writer never blocked on the full pipe")
	if !gone(filepath.Join(e.helper, "wrote")) {
		t.Fatal("the agent finished writing while its guardian was stopped")
	}
	if err := unix.Kill(gpid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 30*time.Second, func() bool { return !gone(filepath.Join(e.helper, "wrote")) }, "the agent did not finish writing")
	stopSession(t, s)
	stdout, _ := readLog(t, spec.LogPath, 256<<10, true)
	checkNumbered(t, stdout, 200000)
}

// inPipeWrite reports whether process pid waits in the kernel's
// pipe_write (anon_pipe_write on newer kernels): its pipe is full.
func inPipeWrite(pid int) bool {
	w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	return strings.HasSuffix(string(w), "pipe_write")
}

// A guardian killed (SIGKILL) while its agent waits on a full pipe: the
// agent's write fails at once, SIGPIPE ending it, or EPIPE where it
// ignores the signal; nothing of the log is written twice or out of
// order: what reached the file before the kill is lines 1 to n, the
// last of them cut where the kill interrupted the guardian's write; the
// next guardian of the identity writes its lines whole after them.
func TestOutputGuardianKilled(t *testing.T) {
	for _, c := range []struct {
		name, trap string
		ended      func(unix.WaitStatus) bool
	}{
		{"sigpipe", "", func(ws unix.WaitStatus) bool { return ws.Signaled() && ws.Signal() == unix.SIGPIPE }},
		{"epipe", `trap "" PIPE; `, func(ws unix.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() != 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newWorld(t)
			spec := e.spec("log@killed-" + c.name)
			// exec: the agent's pid is seq's, which writes.
			spec.Argv = []string{"sh", "-c", c.trap + `while [ ! -e "$HELPER_DIR/go" ]; do sleep 0.01; done; exec seq 1 100000000`}
			spec.Logs = &logfile.Policy{MaxSize: 1 << 20, Keep: 100}
			s := e.start(spec)
			gpid, apid := s.Ready().GuardianPID, s.Ready().AgentPID
			if err := os.WriteFile(filepath.Join(e.helper, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			testproc.Eventually(t, 30*time.Second, func() bool { fi, err := os.Stat(spec.LogPath + ".1"); return err == nil && fi.Size() > 0 }, "the log never rotated")
			if err := unix.Kill(gpid, unix.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			testproc.Eventually(t, 10*time.Second, func() bool { return inPipeWrite(apid) }, "the writer never blocked on the full pipe")
			// This process is a subreaper: the agent, orphaned, is its
			// child, and its end is read here.
			if err := unix.Kill(gpid, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-s.Done()
			var ws unix.WaitStatus
			testproc.Eventually(t, 10*time.Second, func() bool {
				pid, err := unix.Wait4(apid, &ws, unix.WNOHANG, nil)
				return pid == apid || err != nil
			}, "the agent still writes, or waits, with its guardian killed")
			if !c.ended(ws) {
				t.Errorf("the agent ended with %v (signaled %v, exit %d)", ws.Signal(), ws.Signaled(), ws.ExitStatus())
			}
			next := spec
			next.Argv = []string{"echo", "after"}
			waitStopped(t, e, e.start(next), 30*time.Second)
			stdout, _ := readLog(t, spec.LogPath, 1<<20, false)
			if len(stdout) < 2 || stdout[len(stdout)-1] != "after" {
				t.Fatalf("the log's lines end with %q, want the numbers, then the next guardian's agent's", stdout[max(0, len(stdout)-2):])
			}
			stdout = stdout[:len(stdout)-1]
			n := len(stdout)
			if last := stdout[n-1]; last != strconv.Itoa(n) && strings.HasPrefix(strconv.Itoa(n), last) {
				t.Logf("the last line, %q, was cut by the kill", last)
				n--
			}
			checkNumbered(t, stdout[:n], n)
			t.Logf("%d lines in the log, the rest lost with the guardian", n)
		})
	}
}
