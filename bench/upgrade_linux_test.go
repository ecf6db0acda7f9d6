//go:build linux

package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// BenchmarkUpgrade measures upgrades of a service running many agents
// (200, see agentsEnv), each iteration one "service upgrade" to the
// binary the service runs (the API's upgrade, as the command line asks
// it), while four clients ask for the status, each every hammerEvery
// (a status of 200 agents is some 60 KB of JSON: as fast as they can,
// they would take the CPU the upgrade is measured on):
//
//   - upgrade-ms: from the upgrade request until the successor serves,
//     as the service measures it (Status.Service.Upgrade.Took);
//   - again-ms: from the upgrade request until the first status answer
//     from the successor reaches a client (the request's first
//     milliseconds check the new binary, with the API answering);
//   - gap-ms: from the moment the API stopped accepting (the pause,
//     Status.Service.Upgrade.Paused) until that first answer: how long
//     the API did not answer;
//   - wait-max-ms: the longest any status request waited during the
//     upgrade (it queues in the listener's backlog meanwhile);
//   - refused: status requests that failed (the target is none);
//   - changed: agents whose pid, guardian pid, since or restart count is
//     not what it was before the upgrade (the target is none, I9).
//
// Run it as go test ./bench/ -run '^$' -bench Upgrade -benchtime=20x.
func BenchmarkUpgrade(b *testing.B) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorld(b, n)
	u := newUndo(b)
	s, up, undoKey := w.startRunning(b, exe, u)
	if _, err := waitTrees(up.rows, waitLimit); err != nil {
		b.Fatal(err)
	}
	before := rowsOf(up.rows)

	var took, again, gap, waitMax []time.Duration
	refused, changed := 0, 0
	for b.Loop() {
		r, err := w.upgradeOnce(exe)
		if err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		took, again, gap, waitMax = append(took, r.took), append(again, r.again), append(gap, r.gap), append(waitMax, r.waitMax)
		refused += r.refused
		b.StopTimer()
		st, err := w.client.Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range st.Agents {
			if p, ok := before[a.ID]; ok && (a.PID != p.PID || a.GuardianPID != p.GuardianPID || !a.Since.Equal(p.Since) || a.Restarts != p.Restarts || a.State != api.StateRunning) {
				changed++
				b.Logf("agent %s changed: %+v, was %+v", a.ID, a, p)
			}
		}
		b.StartTimer()
	}

	trees, err := waitTrees(up.rows, waitLimit)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.killAndWatch(trees, waitLimit); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	if err := s.finish(trees); err != nil {
		b.Fatal(err)
	}
	u.drop(undoKey)

	reportDurations(b, "upgrade-", took)
	reportDurations(b, "again-", again)
	reportDurations(b, "gap-", gap)
	b.ReportMetric(millis(quantile(waitMax, 1)), "wait-max-ms")
	b.ReportMetric(float64(refused), "refused")
	b.ReportMetric(float64(changed), "changed")
	checkTarget(b, "API answering again after the upgrade began", millis(quantile(again, 1)), 50, "ms")
	checkTarget(b, "API answering again after it paused", millis(quantile(gap, 1)), 50, "ms")
	checkTarget(b, "status requests refused during upgrades", float64(refused), 0, "")
	checkTarget(b, "agents changed by upgrades", float64(changed), 0, "")
}

func rowsOf(rows []api.Agent) map[string]api.Agent {
	m := make(map[string]api.Agent, len(rows))
	for _, r := range rows {
		m[r.ID] = r
	}
	return m
}

// hammerEvery paces each status client of BenchmarkUpgrade.
const hammerEvery = 5 * time.Millisecond

// upgradeResult is one upgrade as upgradeOnce saw it.
type upgradeResult struct {
	took, again, gap, waitMax time.Duration
	refused                   int
}

// upgradeOnce upgrades the world's service to exe with four clients
// asking for the status meanwhile, and returns when the successor serves
// and every client has seen it.
func (w *svcWorld) upgradeOnce(exe string) (upgradeResult, error) {
	var r upgradeResult
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var mu sync.Mutex
	var first time.Time // the first answer from the successor
	seen := 0           // clients that have had one
	var wg sync.WaitGroup
	begin := time.Now()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				st, err := w.client.Status(ctx)
				t1 := time.Now()
				mu.Lock()
				r.waitMax = max(r.waitMax, t1.Sub(t0))
				if err != nil {
					r.refused++
				}
				successor := err == nil && st.Service != nil && st.Service.Upgrade != nil && st.Service.Upgrade.ID == id && st.Service.Upgrade.Took > 0
				if successor && (first.IsZero() || t1.Before(first)) {
					first = t1
				}
				mu.Unlock()
				if successor {
					mu.Lock()
					seen++
					mu.Unlock()
					return
				}
				time.Sleep(hammerEvery)
			}
		})
	}
	ans, err := w.client.Upgrade(ctx, api.UpgradeRequest{Executable: exe, ID: id})
	if err != nil {
		cancel()
		wg.Wait()
		return r, fmt.Errorf("upgrade: %w", err)
	}
	_ = ans
	wg.Wait()
	if seen < 4 {
		return r, fmt.Errorf("the successor did not answer within a minute")
	}
	st, err := w.client.Status(ctx)
	if err != nil {
		return r, err
	}
	if u := st.Service.Upgrade; u.Error != nil {
		return r, u.Error
	}
	u := st.Service.Upgrade
	r.took = u.Took
	r.again = first.Sub(begin)
	r.gap = first.Sub(u.Began.Add(u.Paused))
	return r, nil
}
