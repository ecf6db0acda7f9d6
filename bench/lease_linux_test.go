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
	for _, w := range worlds {
		s, err := w.startService(exe)
		if err != nil {
			b.Fatal(err)
		}
		u.add(s.abort)
		if err := waitAPI(w.client, s); err != nil {
			b.Fatal(err)
		}
		w.ids = []string{probeID}
	}
	took := make([][]time.Duration, len(worlds))
	for b.Loop() {
		for i, w := range worlds {
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
