package tests

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// TestStatusShowsWhatAgentsCost: status --json and the table show the CPU
// time and memory of an agent's whole tree (a parent and a child that
// each hold 32 MiB, the child burning a CPU), summed over its processes
// where the cgroup keeps no memory account (this machine's cgroup v2 has
// no controllers) or from the cgroup where it does; an agent that does not
// run, and one that was stopped, cost nothing.
func TestStatusShowsWhatAgentsCost(t *testing.T) {
	testproc.Used("burn") // started by burn-tree
	w := newWorld(t)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: burner
    command: [%s]
    autostart: true
    stop_timeout: 2s
  - id: idle
    command: [/bin/sleep, "1000"]
`, strings.Join(testproc.Argv("burn-tree"), ", ")))
	w.startService("default")
	began := time.Now()
	w.waitState("default", "burner", api.StateRunning)

	var row statusRow
	if !testproc.UntilEvery(20*time.Second, 100*time.Millisecond, func() bool {
		row = w.status("default")["burner"]
		u := row.Usage
		return u != nil && u.Procs == 2 && u.CPUSeconds >= 0.5 && u.MemoryBytes >= 2*burnHalf
	}) {
		t.Fatalf("the burner's usage never showed its tree: %+v", row.Usage)
	}
	u := row.Usage
	if limit := time.Since(began).Seconds() * float64(runtime.NumCPU()); u.CPUSeconds > limit {
		t.Errorf("cpu_seconds %.2f: more than the %.2f the machine's CPUs had since the agent started", u.CPUSeconds, limit)
	}
	if u.MemoryBytes > 2*burnHalf+256<<20 {
		t.Errorf("memory_bytes %d MiB: far more than the tree's %d MiB", u.MemoryBytes>>20, 2*burnHalf>>20)
	}
	if u.Source != api.UsageProcesses && u.Source != api.UsageCgroup {
		t.Errorf("source %q, want processes or cgroup", u.Source)
	}
	t.Logf("burner: %.2f s CPU, %d MiB, %d processes, by %s", u.CPUSeconds, u.MemoryBytes>>20, u.Procs, u.Source)
	if idle := w.status("default")["idle"]; idle.State != api.StateStopped || idle.Usage == nil || *idle.Usage != (api.Usage{}) {
		t.Errorf("an agent that does not run: %+v %+v, want a zero usage", idle, idle.Usage)
	}

	// The table: the figures in CPU and MEM, "-" for the stopped agent.
	table := w.mustRun("status").stdout
	lines := strings.Split(table, "\n")
	if h := strings.Fields(lines[0]); len(h) < 7 || h[5] != "CPU" || h[6] != "MEM" {
		t.Fatalf("status table header: %q", lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		switch {
		case len(f) < 7:
		case f[0] == "burner" && (!strings.HasSuffix(f[6], "M") || f[5] == "-"):
			t.Errorf("the burner's row shows no cost: %q", l)
		case f[0] == "idle" && (f[5] != "-" || f[6] != "-"):
			t.Errorf("the stopped agent's row shows a cost: %q", l)
		}
	}

	// The service upgraded in place still measures the tree it took over.
	if r := w.run(time.Minute, "service", "upgrade"); r.code != 0 {
		t.Fatalf("service upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if b := w.status("default")["burner"]; b.State != api.StateRunning || b.Usage == nil || b.Usage.Procs != 2 || b.Usage.MemoryBytes < 2*burnHalf {
		t.Errorf("after an upgrade: %+v %+v, want the running tree's two processes", b, b.Usage)
	}

	w.mustRun("stop", "burner")
	if b := w.status("default")["burner"]; b.State != api.StateStopped || b.Usage == nil || *b.Usage != (api.Usage{}) {
		t.Errorf("after stop: %+v %+v, want a zero usage", b, b.Usage)
	}
}
