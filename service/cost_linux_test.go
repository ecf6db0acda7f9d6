package service

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestStatusWithUsage: a running agent that holds 64 MiB and burns a CPU
// shows that cost; one that does not run, or was stopped, costs nothing;
// the plain status measures nothing. The status also says which config
// file the service reads.
func TestStatusWithUsage(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: burner
    command: AGENT, burn]
    stop_timeout: 1s
  - id: idle
    command: AGENT, sleep]
`)
	c := w.controller(Options{})
	began := time.Now()
	if _, err := c.Start(context.Background(), "burner", false); err != nil {
		t.Fatal(err)
	}
	var u *api.Usage
	waitFor(t, "the burner's usage", func() bool {
		for _, a := range c.StatusWithUsage().Agents {
			if a.ID == "burner" {
				u = a.Usage
			}
		}
		return u != nil && u.CPUSeconds >= 0.3 && u.MemoryBytes >= 64<<20
	})
	if u.Procs != 1 || (u.Source != api.UsageProcesses && u.Source != api.UsageCgroup) {
		t.Errorf("usage %+v: want one process, measured by its processes or its cgroup", u)
	}
	if limit := time.Since(began).Seconds() * float64(runtime.NumCPU()); u.CPUSeconds > limit {
		t.Errorf("cpu_seconds %.2f: more than the machine's %.2f", u.CPUSeconds, limit)
	}
	if u.MemoryBytes > 64<<20+256<<20 {
		t.Errorf("memory %d MiB: far more than the agent's 64 MiB", u.MemoryBytes>>20)
	}
	st := c.StatusWithUsage()
	for _, a := range st.Agents {
		if a.ID == "idle" && (a.Usage == nil || *a.Usage != (api.Usage{})) {
			t.Errorf("an agent that does not run: usage %+v, want zero", a.Usage)
		}
	}
	if st.ConfigPath != w.paths.Config || st.ConfigGiven {
		t.Errorf("config %q (given %v), want %q, not given", st.ConfigPath, st.ConfigGiven, w.paths.Config)
	}
	for _, a := range c.Status().Agents {
		if a.Usage != nil {
			t.Errorf("the plain status measured %s: %+v", a.ID, a.Usage)
		}
	}
	if _, err := c.Stop(context.Background(), "burner"); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.StatusWithUsage().Agents {
		if a.ID == "burner" && (a.Usage == nil || *a.Usage != (api.Usage{})) {
			t.Errorf("after stop: usage %+v, want zero", a.Usage)
		}
	}
}
