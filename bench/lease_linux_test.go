package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
)

// BenchmarkLeaseStart measures what holding an identity in etcd adds to
// an agent's start (I10): two services, one whose config has a lease
// section (a three-member etcd cluster on loopback) and one without, each
// start the probe through the API (answered once it runs), in turns, and
// stop it outside the timed region. The lease's start is one etcd
// transaction (put if absent), its stop one more (delete if still ours).
//
// Metrics: local-p50-ms, lease-p50-ms (and their max-ms), and
// lease-added-ms, the difference of the medians.
func BenchmarkLeaseStart(b *testing.B) {
	etcdtest.Skip(b)
	exe := tetherBinary(b)
	u := newUndo(b)
	// After the undo: the cluster stops first (cleanups run last in,
	// first out), before the services' undo reaps what they leave.
	cl := etcdtest.Start(b, 3)
	local, leased := newSvcWorld(b, 0), newSvcWorld(b, 0)
	cfg := filepath.Join(leased.dir, "config", "tether", "agents.yaml")
	body, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	section := fmt.Sprintf("lease:\n  etcd: {endpoints: [\"%s\"]}\n  host: bench\n", strings.Join(cl.Endpoints(), `", "`))
	if err := os.WriteFile(cfg, append([]byte(section), body...), 0o600); err != nil {
		b.Fatal(err)
	}
	worlds := []*svcWorld{local, leased}
	pids := make([]int, len(worlds))
	for i, w := range worlds {
		s, err := w.startService(exe)
		if err != nil {
			b.Fatal(err)
		}
		u.add(s.abort)
		if err := waitAPI(w.client, s); err != nil {
			b.Fatal(err)
		}
		w.ids = []string{probeID}
		pids[i] = s.cmd.Process.Pid
	}
	// Each start is timed from services at rest, as a person's start
	// finds its service: the warm guardians back that the start before
	// it took (of either service), and none of it using a core.
	warm := make([]int, len(worlds))
	if err := atRest(exe, pids, warm); err != nil {
		b.Fatal(err)
	}
	took := make([][]time.Duration, len(worlds))
	for b.Loop() {
		for i, w := range worlds {
			b.StopTimer()
			if err := atRest(exe, pids, warm); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			begin := time.Now()
			if _, err := w.startAgent(probeID); err != nil {
				b.Fatal(err)
			}
			took[i] = append(took[i], time.Since(begin))
			b.StopTimer()
			if err := w.act(w.client.Stop, "stopped"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	reportDurations(b, "local-", took[0])
	reportDurations(b, "lease-", took[1])
	added := millis(quantile(took[1], 0.5)) - millis(quantile(took[0], 0.5))
	b.ReportMetric(added, "lease-added-ms")
	checkTarget(b, "the median start's time added by the lease", added, 5, "ms")
}

// Rest, for a benchmark that times one start at a time: the services and
// their guardians together use less than restCPU of a core's time over
// restFor.
const (
	restFor = 20 * time.Millisecond
	restCPU = time.Millisecond
)

// atRest waits until each service of pids has at least as many warm
// guardians as warm says, and its own count at least one, and until
// every one of them is at rest; it then sets warm to the counts it saw.
func atRest(exe string, pids, warm []int) error {
	deadline := time.Now().Add(waitLimit)
	var last time.Duration
	var since time.Time
	for time.Now().Before(deadline) {
		var used time.Duration
		full := true
		counts := make([]int, len(pids))
		for i, pid := range pids {
			procs, err := tetherProcs(pid, exe, nil)
			if err != nil {
				return err
			}
			for _, p := range procs {
				if p.role == rolePool {
					counts[i]++
				}
				if c, err := cpuTime(p.pid); err == nil {
					used += c
				}
			}
			full = full && counts[i] >= max(warm[i], 1)
		}
		switch {
		case !full || since.IsZero() || used-last > restCPU:
			since, last = time.Now(), used
		case time.Since(since) >= restFor:
			copy(warm, counts)
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("the services %v were not at rest within %v", pids, waitLimit)
}
