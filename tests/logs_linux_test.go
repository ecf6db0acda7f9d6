package tests

import (
	"bufio"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/logfile"
)

// tickerYAML is an agent that prints "tick N", N = 1, 2, ..., every
// period.
func tickerYAML(id, marker string, period time.Duration) string {
	return fmt.Sprintf(`  - id: %s
    identity: %s@relay
    command: [/bin/sh, -c, 'i=0; while :; do i=$((i+1)); echo "tick $i"; sleep %g; done', %s]
    autostart: true
    stop_timeout: 2s
`, id, id, period.Seconds(), marker)
}

// followed is a running "tether logs ... -f".
type followed struct {
	lines <-chan string // its stdout, line by line; closed when it ends
	exit  *int          // its exit code, once lines is closed
}

// follow starts "tether logs args..." and returns its stdout lines as they
// come. Its stdout is not read before hold has passed: a slow reader, such
// as a pager. The command is killed and waited for when the test ends.
func (w *world) follow(hold time.Duration, args ...string) followed {
	w.t.Helper()
	cmd := exec.Command(tether, append([]string{"logs"}, args...)...)
	cmd.Env = w.env
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	lines := make(chan string, 1024)
	exit := new(int)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		select {
		case <-time.After(hold):
		case <-stop:
		}
		s := bufio.NewScanner(out)
		for s.Scan() {
			select {
			case lines <- s.Text():
			case <-stop:
				return
			}
		}
		_ = cmd.Wait()
		*exit = cmd.ProcessState.ExitCode()
	}()
	w.t.Cleanup(func() {
		close(stop)
		_ = cmd.Process.Kill()
		<-done
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	})
	return followed{lines, exit}
}

// next reads n lines, failing the test when they do not come within d.
func (f followed) next(t *testing.T, n int, d time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.After(d)
	for len(got) < n {
		select {
		case l, ok := <-f.lines:
			if !ok {
				t.Fatalf("the command ended, exit %d, after %d line(s) of %d; the last: %q", *f.exit, len(got), n, trim(got[max(0, len(got)-3):]))
			}
			got = append(got, l)
		case <-deadline:
			t.Fatalf("%d line(s) in %v, want %d; the last: %q", len(got), d, n, trim(got[max(0, len(got)-3):]))
		}
	}
	return got
}

// tickOf returns N of "tick N" (after the line's time), or -1.
func tickOf(line string) int {
	s, ok := strings.CutPrefix(logfile.Parse([]byte(line)).Text, "tick ")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// "tether logs ID -f" prints the agent's new lines as it writes them, in
// order, and keeps following.
func TestLogsFollow(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + tickerYAML("x", m, 100*time.Millisecond))
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	// Wait for a first tick, so "new" means something.
	var last int
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		if r := w.run(10*time.Second, "logs", "x", "-n", "1"); r.code == 0 {
			last = tickOf(strings.TrimSpace(r.stdout))
		}
		return last >= 1
	}) {
		t.Fatal("the agent never ticked")
	}

	begin := time.Now()
	got := w.follow(0, "x", "-f", "-n", "0").next(t, 3, 10*time.Second)
	t.Logf("3 lines in %v: %q", time.Since(begin), got)
	first := tickOf(got[0])
	if first <= last {
		t.Errorf("first followed line %q is not newer than tick %d, the last before following", got[0], last)
	}
	for i, l := range got {
		if tickOf(l) != first+i {
			t.Errorf("followed lines %q are not consecutive ticks", got)
			break
		}
	}
}

// trim shortens lines to their first word after the time, for messages.
func trim(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i], _, _ = strings.Cut(logfile.Parse([]byte(l)).Text, " ")
	}
	return out
}
