package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/logfile"
)

// chattyYAML is agent id printing "id N" on stdout and "id err N" on
// stderr every period, through a 4 KiB rotation: a rotation every few
// seconds.
func chattyYAML(id, marker string, period time.Duration) string {
	return fmt.Sprintf(`  - id: %s
    command: [/bin/sh, -c, 'i=0; while :; do i=$((i+1)); echo "$1 $i"; echo "$1 err $i" >&2; sleep %g; done', %s, %s]
    autostart: true
    stop_timeout: 2s
    logs: {max_size: 4KiB, keep: 100}
`, id, period.Seconds(), marker, id)
}

// merged is one line of "tether logs a b": its agent and its log line.
type merged struct {
	id   string
	line logfile.Line
}

// parseMerged splits "id | line"; ok is false for a line of another shape.
func parseMerged(s string) (merged, bool) {
	id, rest, ok := strings.Cut(s, " | ")
	if !ok {
		return merged{}, false
	}
	return merged{strings.TrimSpace(id), logfile.Parse([]byte(rest))}, true
}

// checkMerged checks lines of several agents: each "id | ..." with the
// agents' stdout numbers consecutive per agent, and the times in order.
func checkMerged(t *testing.T, lines []string, ids ...string) {
	t.Helper()
	next := map[string]int{}
	var last time.Time
	for _, l := range lines {
		m, ok := parseMerged(l)
		if !ok {
			t.Fatalf("line %q has no \"id | \" prefix", l)
		}
		if m.line.Time.Before(last) {
			t.Errorf("line %q comes before the time of the line above it, %v", l, last)
		}
		last = m.line.Time
		f := strings.Fields(m.line.Text)
		if m.line.Stream != logfile.Stdout || len(f) != 2 || f[0] != m.id {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		if prev, seen := next[m.id]; seen && n != prev {
			t.Errorf("%s: line %d after %d: lost or repeated", m.id, n, prev-1)
		}
		next[m.id] = n + 1
	}
	for _, id := range ids {
		if next[id] == 0 {
			t.Errorf("no stdout line of %s in %q", id, lines)
		}
	}
}

// chattyWorld is a service running the chatty agents a and bee.
func chattyWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + chattyYAML("a", m, 20*time.Millisecond) + chattyYAML("bee", m, 30*time.Millisecond))
	w.startService("default")
	w.waitState("default", "a", api.StateRunning)
	w.waitState("default", "bee", api.StateRunning)
	return w
}

// "tether logs a b" and "--all" merge the agents' lines in time order,
// each after "id |"; -f goes on across rotations; --json and --since.
func TestLogsMerged(t *testing.T) {
	w := chattyWorld(t)
	testproc.Eventually(t, 20*time.Second, func() bool {
		r := w.run(10*time.Second, "logs", "a", "bee", "-n", "40")
		return r.code == 0 && strings.Count(r.stdout, "\n") == 40
	}, "the agents did not log 40 lines")

	r := w.mustRun("logs", "a", "bee", "-n", "40")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	checkMerged(t, lines, "a", "bee")
	if !strings.HasPrefix(lines[0], "a   | ") && !strings.HasPrefix(lines[0], "bee | ") {
		t.Errorf("the prefixes are not padded to the longest id: %q", lines[0])
	}
	if strings.Contains(r.stdout, "\x1b[") {
		t.Error("colours in output that is not a terminal")
	}

	// Following every agent, across several rotations of each.
	got := w.follow(0, "-f", "--all", "-n", "0").next(t, 600, 60*time.Second)
	checkMerged(t, got, "a", "bee")

	// --json: time, agent, stream and text; --since keeps recent lines.
	// The agents have run for several seconds by now.
	var begin time.Time
	testproc.Eventually(t, 10*time.Second, func() bool {
		begin = time.Now()
		r = w.run(10*time.Second, "logs", "--all", "--json", "--since", "1s")
		return r.code == 0 && strings.Count(r.stdout, "\n") >= 4
	}, "no lines of the last second")
	streams := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var j struct {
			Time   time.Time `json:"time"`
			Agent  string    `json:"agent"`
			Stream string    `json:"stream"`
			Text   string    `json:"text"`
		}
		if err := json.Unmarshal([]byte(l), &j); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		if j.Time.Before(begin.Add(-time.Second-50*time.Millisecond)) || (j.Agent != "a" && j.Agent != "bee") || !strings.HasPrefix(j.Text, j.Agent+" ") {
			t.Errorf("--json --since 1s: %q", l)
		}
		if (j.Stream == "stderr") != strings.Contains(j.Text, " err ") {
			t.Errorf("stream %q of %q", j.Stream, j.Text)
		}
		streams[j.Stream] = true
	}
	if !streams["stdout"] || !streams["stderr"] {
		t.Errorf("streams %v, want stdout and stderr", streams)
	}
}

// onTerminal runs "tether ARGS" on a pseudo-terminal of its own
// (script(1)), with env, and returns what the terminal got so far; the
// command is killed when the test ends, if still running.
func (w *world) onTerminal(env []string, args ...string) *testproc.Buffer {
	w.t.Helper()
	var term, termErr testproc.Buffer
	cmd := exec.Command("script", "-qec", "exec "+tether+" "+strings.Join(args, " "), os.DevNull)
	cmd.Env = env
	startInBackground(w.t, cmd, &term, &termErr)
	return &term
}

// "tether logs -f a b" on a terminal colours each agent's "id |" prefix,
// each agent its own colour; NO_COLOR takes the colours away.
func TestLogsMergedColoursOnATerminal(t *testing.T) {
	needTools(t, "script")
	w := chattyWorld(t)
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}

	term := w.onTerminal(env, "logs", "-f", "a", "bee", "-n", "0")
	colours := map[string]string{}
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		for _, l := range termLines(term.String()) {
			g := colouredPrefix.FindStringSubmatch(l)
			if g == nil {
				continue
			}
			id := g[2]
			if text := logfile.Parse([]byte(g[3])).Text; !strings.HasPrefix(text, id+" ") {
				t.Fatalf("a line of another agent after %s's prefix: %q", id, l)
			}
			if c, seen := colours[id]; seen && c != g[1] {
				t.Fatalf("%s's prefix in colour %s, then %s", id, c, g[1])
			}
			colours[id] = g[1]
		}
		return len(colours) == 2
	}) {
		t.Fatalf("the terminal never showed both agents' prefixes coloured:\n%q", term.String())
	}
	if colours["a"] == colours["bee"] {
		t.Errorf("both agents' prefixes in colour %s", colours["a"])
	}

	// NO_COLOR: the same prefixes, with no colour at all.
	term = w.onTerminal(append(env, "NO_COLOR=1"), "logs", "-f", "a", "bee", "-n", "0")
	seen := map[string]bool{}
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		for _, l := range termLines(term.String()) {
			if g := plainPrefix.FindStringSubmatch(l); g != nil && strings.HasPrefix(logfile.Parse([]byte(g[2])).Text, g[1]+" ") {
				seen[g[1]] = true
			}
		}
		return len(seen) == 2
	}) {
		t.Fatalf("with NO_COLOR the terminal never showed both agents' prefixes:\n%q", term.String())
	}
	if sgr.MatchString(term.String()) {
		t.Errorf("colours with NO_COLOR set:\n%q", term.String())
	}
}

// A line of "tether logs a bee" on a terminal: the prefix, padded,
// between an SGR colour and the reset; or with no colour. sgr is any SGR
// sequence (a colour, a reset).
var (
	colouredPrefix = regexp.MustCompile(`^\x1b\[([0-9;]+)m(a|bee) *\|\x1b\[0m (.*)$`)
	plainPrefix    = regexp.MustCompile(`^(a|bee) *\| (.*)$`)
	sgr            = regexp.MustCompile(`\x1b\[[0-9;]*m`)
)

// termLines are the whole lines a terminal got (each ends with CR LF).
func termLines(s string) []string {
	lines := strings.Split(s, "\r\n")
	return lines[:len(lines)-1]
}
