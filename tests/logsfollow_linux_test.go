package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/logfile"
)

// countingYAML is an agent that prints the numbers 1, 2, 3, ... in bursts
// of burst lines, one burst every period. Each line is padded to 100
// bytes (%g keeps a line's number its first word).
func countingYAML(id, marker string, burst int, period time.Duration) string {
	pad := strings.Repeat("x", 90)
	return fmt.Sprintf(`  - id: %s
    identity: %s@relay
    command: [/bin/sh, -c, 'i=0; while :; do seq -f "%%g %s" $((i+1)) $((i+%d)); i=$((i+%d)); sleep %g; done', %s]
    autostart: true
    stop_timeout: 2s
`, id, id, pad, burst, burst, period.Seconds(), marker)
}

// consecutive returns the first place where lines are not consecutive
// numbers (after their times), or -1.
func consecutive(lines []string) int {
	prev := -1
	for i, l := range lines {
		first, _, _ := strings.Cut(logfile.Parse([]byte(l)).Text, " ")
		n, err := strconv.Atoi(first)
		if err != nil || i > 0 && n != prev+1 {
			return i
		}
		prev = n
	}
	return -1
}

// An agent that logs in bursts (1000 lines at once) does not end "tether
// logs -f": the follow keeps up, or catches up, and loses no line.
func TestLogsFollowKeepsUpWithBursts(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + countingYAML("x", m, 1000, 300*time.Millisecond))
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	got := w.follow(0, "x", "-f", "-n", "0").next(t, 3000, 20*time.Second)
	if i := consecutive(got); i >= 0 {
		t.Errorf("followed lines not consecutive at line %d: %q", i, trim(got[max(0, i-2):i+1]))
	}
}

// "tether logs ID -f -n N" prints the last N lines, then every line
// written after them: none is lost in between, even when its reader is
// slow to start reading (a pager).
func TestLogsFollowContinuesTheTail(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	// 2000 lines of 100 bytes at once, then one every few milliseconds.
	pad := strings.Repeat("x", 90)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: x
    identity: x@relay
    command: [/bin/sh, -c, 'seq -f "%%g %[1]s" 1 2000; i=2000; while :; do i=$((i+1)); echo "$i %[1]s"; sleep 0.005; done', %[2]s]
    autostart: true
    stop_timeout: 2s
`, pad, m))
	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	var r result
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		r = w.run(10*time.Second, "logs", "x", "-n", "1")
		n, _ := strconv.Atoi(strings.Fields(logfile.Parse([]byte(r.stdout)).Text + " 0")[0])
		return n > 2000
	}) {
		t.Fatalf("the agent never logged its 2000 lines: %s%s", r.stdout, r.stderr)
	}
	// 1500 lines of tail fill the pipe (150 kB): the command waits for
	// its reader, who starts 300 ms late, before it can follow.
	const tail = 1500
	got := w.follow(300*time.Millisecond, "x", "-f", "-n", strconv.Itoa(tail)).next(t, tail+20, 20*time.Second)
	if i := consecutive(got); i >= 0 {
		t.Errorf("lines lost at line %d (the tail is %d lines): %q", i, tail, trim(got[max(0, i-2):i+1]))
	}
}
