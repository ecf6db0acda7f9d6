package windows

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestUsageWindows: a status with usage measures the running agent by its
// job (its two processes, their working sets), and a stopped one not at
// all. Wine keeps no CPU time in a job's accounting, so the CPU figure is
// not checked here.
func TestUsageWindows(t *testing.T) {
	w := newWorld(t)
	p := w.profile("usage")
	svc := w.startService(p)
	begin := time.Now()
	if code, out := w.run("--profile", p, "start", "probe"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	w.waitTree(begin)
	usage := func() *api.Usage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := svc.client.StatusWithUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range st.Agents {
			if a.ID == "probe" {
				return a.Usage
			}
		}
		t.Fatalf("no probe in %+v", st)
		return nil
	}
	if u := usage(); u == nil || u.Source != api.UsageJob || u.Procs != 2 || u.MemoryBytes == 0 {
		t.Errorf("usage of the running agent %+v, want its job's two processes and their memory", u)
	}
	if code, out := w.run("--profile", p, "stop", "probe"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	if u := usage(); u == nil || *u != (api.Usage{}) {
		t.Errorf("usage of the stopped agent %+v, want zero", u)
	}
	svc.quit(t)
}
