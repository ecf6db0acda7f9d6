package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// waitingRow is a row of "status --json" with what it waits for.
type waitingRow struct {
	ID      string       `json:"id"`
	State   api.State    `json:"state"`
	Waiting *api.Waiting `json:"waiting"`
}

// waitingRows are the rows of "status --json", by id.
func (w *world) waitingRows() map[string]waitingRow {
	w.t.Helper()
	var out struct {
		Agents []waitingRow `json:"agents"`
	}
	r := w.mustRun("status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		w.t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	rows := map[string]waitingRow{}
	for _, a := range out.Agents {
		rows[a.ID] = a
	}
	return rows
}

// startInBackground starts cmd, its output into out, and kills and
// waits for it when the test ends if it is still running; the returned
// channel has its end.
func startInBackground(t *testing.T, cmd *exec.Cmd, out, errOut *testproc.Buffer) <-chan error {
	t.Helper()
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
		}
	})
	return done
}

// TestStartSaysWhatItWaitsFor: `tether start` of an agent that becomes
// ready late shows, on a terminal, what it waits for and for how long,
// updated in place, and leaves only its answer; on a pipe it prints the
// answer alone. Meanwhile status, in JSON and as a table, says what the
// agent waits for, and what an agent that starts after it waits for.
func TestStartSaysWhatItWaitsFor(t *testing.T) {
	needTools(t, "script")
	w := newWorld(t)
	m := uniqueMarker()
	flag := filepath.Join(w.dir, "up")
	w.writeConfig(fmt.Sprintf(`agents:
  - id: slowpoke
    command: [/bin/sh, -c, 'until [ -e %[1]s ]; do sleep 0.05; done; echo listening on 8080; exec sleep 1000', %[2]s-slow]
    ready: {log: "listening on"}
    start_timeout: 90s
  - id: next
    command: [/bin/sh, -c, 'exec sleep 1000', %[2]s-next]
    after: [slowpoke]
`, flag, m))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })

	// On a terminal: script(1) runs the command on a pseudo-terminal of
	// its own, and records what the terminal got.
	var term, termErr testproc.Buffer
	cmd := exec.Command("script", "-qec", tether+" start slowpoke", os.DevNull)
	cmd.Env = append(w.env, "COLUMNS=200")
	done := startInBackground(t, cmd, &term, &termErr)

	var rows map[string]waitingRow
	if !testproc.UntilEvery(20*time.Second, 50*time.Millisecond, func() bool {
		rows = w.waitingRows()
		return rows["slowpoke"].Waiting != nil
	}) {
		t.Fatalf("status --json never said what slowpoke waits for: %+v\nterminal: %q", rows, term.String())
	}
	wt := rows["slowpoke"].Waiting
	if rows["slowpoke"].State != api.StateStarting || wt.For != api.WaitLog || wt.What != "listening on" || wt.Deadline.Sub(wt.Since) != 90*time.Second {
		t.Errorf("slowpoke's row %+v, waiting %+v: want starting, waiting for log %q for 90s", rows["slowpoke"], wt, "listening on")
	}
	if out := w.mustRun("status").stdout; !strings.Contains(out, "waiting for its log line 'listening on' (") {
		t.Errorf("status does not say what slowpoke waits for:\n%s", out)
	}
	// An agent that starts after it waits for it, named (its start
	// answers once it is spawned, after slowpoke is ready).
	var nextOut, nextErr testproc.Buffer
	next := w.cmd(tether, "start", "next")
	next.Env = w.env
	nextDone := startInBackground(t, next, &nextOut, &nextErr)
	if !testproc.UntilEvery(10*time.Second, 50*time.Millisecond, func() bool {
		rows = w.waitingRows()
		nw := rows["next"].Waiting
		return nw != nil && nw.For == api.WaitAgents && strings.Join(nw.Agents, ",") == "slowpoke"
	}) {
		t.Errorf("next's row never said it waits for slowpoke: %+v", rows["next"])
	}

	// The line is drawn again as the wait goes on.
	if !testproc.UntilEvery(20*time.Second, 20*time.Millisecond, func() bool {
		return strings.Contains(term.String(), "(2 s of 90 s)")
	}) {
		t.Fatalf("the terminal never showed the wait going on:\n%q", term.String())
	}
	frames := regexp.MustCompile(`\rslowpoke: waiting for its log line 'listening on' \((\d+) s of 90 s\)\x1b\[K`).FindAllStringSubmatch(term.String(), -1)
	if len(frames) < 2 || frames[0][1] == frames[len(frames)-1][1] {
		t.Errorf("want the wait drawn in place at least twice, with its time going on; got %q", term.String())
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("start on a terminal: %v\n%q%q", err, term.String(), termErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("start on a terminal did not return once slowpoke was ready:\n%q", term.String())
	}
	select {
	case err := <-nextDone:
		if err != nil || !strings.Contains(nextOut.String(), "next: running") {
			t.Errorf("start next: %v: %s%s", err, nextOut.String(), nextErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("start next did not return once slowpoke was ready")
	}
	// The last thing drawn erases the line, and the answer follows.
	out := term.String()
	i := strings.LastIndex(out, "\r\x1b[K")
	if i < 0 || !regexp.MustCompile(`^\r\x1b\[Kslowpoke: running \(pid \d+\)\r?\n$`).MatchString(out[i:]) {
		t.Errorf("the terminal's last line is not the answer alone: %q", out)
	}
	if rows = w.waitingRows(); rows["slowpoke"].Waiting != nil {
		t.Errorf("a running agent still says it waits: %+v", rows["slowpoke"].Waiting)
	}

	// On a pipe: the answer alone, however long the wait.
	w.mustRun("stop", "next", "slowpoke")
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr testproc.Buffer
	piped := w.cmd(tether, "start", "slowpoke")
	piped.Env = w.env
	done = startInBackground(t, piped, &stdout, &stderr)
	// Long enough for a terminal to have been drawn to twice.
	if !testproc.UntilEvery(20*time.Second, 50*time.Millisecond, func() bool {
		wt := w.waitingRows()["slowpoke"].Waiting
		return wt != nil && time.Since(wt.Since) > 2*time.Second
	}) {
		t.Fatalf("slowpoke never waited on the second start")
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("start on a pipe: %v\n%s%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("start on a pipe did not return once slowpoke was ready")
	}
	if !regexp.MustCompile(`^slowpoke: running \(pid \d+\)\n$`).MatchString(stdout.String()) || stderr.String() != "" {
		t.Errorf("start on a pipe: stdout %q, stderr %q: want the answer alone", stdout.String(), stderr.String())
	}
}
