//go:build linux

package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
)

// BenchmarkUpgrade measures upgrades of a service running many agents
// (200, see agentsEnv), each iteration one "service upgrade" to the
// binary the service runs (the API's upgrade, as the command line asks
// it), while four clients ask for the status, each every hammerEvery
// (a status of 200 agents is some 60 KB of JSON: as fast as they can,
// they would take the CPU the upgrade is measured on). The binary is the
// one the service started from (BenchmarkUpgradeLanded lands a new one
// before each upgrade):
//
//   - upgrade-ms: from the upgrade request until the successor serves,
//     as the service measures it (Status.Service.Upgrade.Took);
//   - again-ms: from the upgrade request until the first status answer
//     from the successor reaches a client (the request's first
//     milliseconds check the new binary, with the API answering);
//   - gap-ms: from the moment the API stopped accepting (the pause,
//     Status.Service.Upgrade.Paused) until that first answer: how long
//     the API did not answer, which the target (50 ms) bounds;
//   - wait-max-ms: the longest any status request waited during the
//     upgrade (it queues in the listener's backlog meanwhile);
//   - refused: status requests that failed (the target is none);
//   - changed: agents whose pid, guardian pid, since or restart count is
//     not what it was before the upgrade (the target is none, I9).
//
// Run it as go test ./bench/ -run '^$' -bench 'Upgrade$' -benchtime=20x.
func BenchmarkUpgrade(b *testing.B) { benchUpgrades(b, false) }

// BenchmarkUpgradeStalled is BenchmarkUpgrade with a connection that
// sent half a request (a command stopped with Ctrl-Z) open through each
// upgrade: the pause does not wait for it, and the API's silence is held
// to the same target.
func BenchmarkUpgradeStalled(b *testing.B) { benchUpgradesWith(b, false, true) }

// BenchmarkUpgradeLanded is BenchmarkUpgrade the way an install goes: a
// new binary lands at the path the service runs from (a copy of it,
// renamed over it), and then the upgrade is asked. The landing is outside
// the timing; the metrics are BenchmarkUpgrade's.
//
// Run it as go test ./bench/ -run '^$' -bench UpgradeLanded -benchtime=20x.
func BenchmarkUpgradeLanded(b *testing.B) { benchUpgrades(b, true) }

// benchUpgrades is BenchmarkUpgrade, each binary landed first when land
// is set.
func benchUpgrades(b *testing.B, land bool) { benchUpgradesWith(b, land, false) }

// benchUpgradesWith is benchUpgrades, with a stalled connection open
// through each upgrade when stall is set.
func benchUpgradesWith(b *testing.B, land, stall bool) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorld(b, n)
	u := newUndo(b)
	target := exe
	if land {
		target = filepath.Join(w.dir, "bin", "tether")
		if err := landBinary(exe, target); err != nil {
			b.Fatal(err)
		}
	}
	s, up, undoKey := w.startRunning(b, target, u)
	if _, err := waitTrees(up.rows, waitLimit); err != nil {
		b.Fatal(err)
	}
	before := rowsOf(up.rows)

	var took, again, gap, waitMax []time.Duration
	refused, changed := 0, 0
	for b.Loop() {
		if land {
			b.StopTimer()
			if err := landBinary(exe, target); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		var stalled net.Conn
		if stall {
			b.StopTimer()
			var err error
			if stalled, err = w.stall(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		r, err := w.upgradeOnce(target)
		if stalled != nil {
			stalled.Close()
		}
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
	// The target is the API's silence, which the pause begins. The new
	// binary's check comes first, while the service answers as before:
	// it is part of again-ms and not of the silence.
	checkTarget(b, "API answering again after it paused", millis(quantile(gap, 1)), 50, "ms")
	checkTarget(b, "status requests refused during upgrades", float64(refused), 0, "")
	checkTarget(b, "agents changed by upgrades", float64(changed), 0, "")
}

// landBinary puts a copy of exe at target, as an install does: written
// beside it and renamed over it, a new file; the guardian's own
// executable beside exe lands beside target first, as a package's does.
func landBinary(exe, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if g := guardian.ProgramFor(exe); !g.Tether {
		if err := landFile(g.Path, filepath.Join(filepath.Dir(target), guardian.ProgramName)); err != nil {
			return err
		}
	}
	return landFile(exe, target)
}

// landFile puts a copy of the file at from at target: written beside it
// and renamed over it.
func landFile(from, target string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	tmp := target + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, target)
}

// stall opens a connection to the service and sends it half a request,
// and returns once the service has answered a request made after it (so
// it is accepted) and the connection has stalled for stalledFor: a
// client stopped with Ctrl-Z, not one that has just connected (which a
// pause waits for).
func (w *svcWorld) stall() (net.Conn, error) {
	c, err := net.Dial("unix", w.paths.socket)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("GET " + api.PathStatus + " HTTP/1.1\r\nHost: tether\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := w.client.Status(context.Background()); err != nil {
		c.Close()
		return nil, err
	}
	time.Sleep(stalledFor)
	return c, nil
}

// stalledFor is how long a stalled connection of BenchmarkUpgradeStalled
// has said nothing when its upgrade begins.
const stalledFor = time.Second

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
