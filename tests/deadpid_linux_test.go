package tests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// dead reports whether the process pid, started with marker, has
// ended: gone, a zombie (whose command line is empty), or its pid taken
// by another process.
func dead(pid int, marker string) bool {
	return !strings.Contains(cmdline(pid), marker)
}

// TestNoDeadPIDOnTheRow: an agent that exits leaving a process that
// ignores SIGTERM (set before it exits) is torn down for its whole stop timeout; meanwhile,
// and after, its row never names the dead agent's pid (status --json
// and the table), and the failed row shows no pid.
func TestNoDeadPIDOnTheRow(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	w.writeConfig(fmt.Sprintf(`agents:
  - id: leaver
    command: [/bin/sh, -c, '(trap "" TERM; touch %[2]s; exec sleep 1000) & until [ -e %[2]s ]; do sleep 0.01; done; exit 3', %[1]s]
    restart: never
    stop_timeout: 3s
`, m, filepath.Join(w.dir, "trapped")))
	w.startService("default")
	t.Cleanup(func() { cleanupTrees(t, m) })
	r := w.mustRun("start", "leaver")
	got := regexp.MustCompile(`pid (\d+)`).FindStringSubmatch(r.stdout)
	if got == nil {
		t.Fatalf("start leaver: %q, want its pid", r.stdout)
	}
	pid, _ := strconv.Atoi(got[1])
	// A row may name the pid for a moment after the agent died, until
	// its guardian says so; not for longer.
	const grace = 500 * time.Millisecond
	var diedAt time.Time
	var seen []string
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		if diedAt.IsZero() && dead(pid, m) {
			diedAt = time.Now()
		}
		stale := !diedAt.IsZero() && time.Since(diedAt) > grace
		var out struct {
			Agents []struct {
				State api.State `json:"state"`
				PID   int       `json:"pid"`
			} `json:"agents"`
		}
		js := w.mustRun("status", "--json").stdout
		if err := json.Unmarshal([]byte(js), &out); err != nil || len(out.Agents) != 1 {
			t.Fatalf("status --json: %v\n%s", err, js)
		}
		row := out.Agents[0]
		seen = append(seen, fmt.Sprintf("%s/%d", row.State, row.PID))
		if stale && row.PID == pid {
			t.Fatalf("%v after the agent died, its row names its pid %d (%s); rows seen: %v", time.Since(diedAt).Round(time.Millisecond), pid, row.State, seen)
		}
		table := w.mustRun("status").stdout
		if stale && strings.Contains(table, " "+got[1]+" ") {
			t.Fatalf("%v after the agent died, the table names its pid %d:\n%s", time.Since(diedAt).Round(time.Millisecond), pid, table)
		}
		return row.State == api.StateFailed
	}) {
		t.Fatalf("leaver never failed; rows seen: %v", seen)
	}
	if diedAt.IsZero() {
		t.Fatalf("the agent's pid %d never died; rows seen: %v; its command line: %q", pid, seen, cmdline(pid))
	}
	row := w.status("default")["leaver"]
	if row.PID != 0 || row.Error == nil || row.Error.Code != api.CodeExited {
		t.Errorf("the failed row %+v: want no pid and code exited", row)
	}
	lines := strings.Split(w.mustRun("status").stdout, "\n")
	if f := strings.Fields(lines[1]); len(f) < 4 || f[3] != "-" {
		t.Errorf("the failed row shows a pid: %q", lines[1])
	}
}
