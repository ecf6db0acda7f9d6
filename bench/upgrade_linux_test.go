//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/upgrade"
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
//   - gap-ms: from the moment the service stopped accepting (the
//     pause, Status.Service.Upgrade.Paused) until a client's first
//     status answer after it, the stand-in's (see upgrade.StandIn) or
//     else the successor's: how long the API did not answer, which the
//     target (50 ms) bounds;
//   - silent-max-ms: the longest any status request asked during a
//     handover (from its pause to its successor's first answer) waited:
//     with the clients' own scheduling on two busy cores in it;
//   - successor-ms: from the pause until the successor's first answer
//     (every request but a status waits that long);
//   - wait-max-ms: the longest any status request waited during the
//     upgrade, its check included (it queues in the listener's backlog
//     meanwhile);
//   - refused: status requests that failed (the target is none);
//   - changed: agents whose pid, guardian pid, since or restart count is
//     not what it was before the upgrade (the target is none, I9).
//
// A client's wait, in each figure, ends with the answer's first byte:
// the client's decode of the status, on the same two cores, is its own.
//
// Run it as go test ./bench/ -run '^$' -bench 'Upgrade$' -benchtime=20x.
func BenchmarkUpgrade(b *testing.B) { benchUpgrades(b, upgradeCase{}) }

// BenchmarkUpgradeStalled is BenchmarkUpgrade with a connection that
// sent half a request (a command stopped with Ctrl-Z) open through each
// upgrade: the pause does not wait for it, and the API's silence is held
// to the same target.
func BenchmarkUpgradeStalled(b *testing.B) { benchUpgrades(b, upgradeCase{stall: true}) }

// BenchmarkUpgradeConcurrent is BenchmarkUpgrade with two upgrades asked
// at the same moment in each iteration: the one asked while the other
// hands over is answered handing_over and asked again of the successor,
// as "service upgrade" does, so the two serialise. Each upgrade counts in
// the metrics (two per iteration), its silence held to the same target.
//
// Run it as go test ./bench/ -run '^$' -bench 'UpgradeConcurrent$' -benchtime=20x.
func BenchmarkUpgradeConcurrent(b *testing.B) { benchUpgrades(b, upgradeCase{asks: 2}) }

// BenchmarkUpgradeLanded is BenchmarkUpgrade the way an install goes: a
// new binary lands at the path the service runs from (a copy of it,
// renamed over it), and then the upgrade is asked. The landing is outside
// the timing; the metrics are BenchmarkUpgrade's.
//
// Run it as go test ./bench/ -run '^$' -bench UpgradeLanded -benchtime=20x.
func BenchmarkUpgradeLanded(b *testing.B) { benchUpgrades(b, upgradeCase{land: true}) }

// upgradeCase is what an iteration of benchUpgrades does besides one
// upgrade.
type upgradeCase struct {
	land  bool // land the binary first, as an install does
	stall bool // hold a stalled connection open through the upgrade
	asks  int  // upgrades asked at the same moment; zero means one
}

// benchUpgrades is BenchmarkUpgrade, each iteration as c says.
func benchUpgrades(b *testing.B, c upgradeCase) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorld(b, n)
	u := newUndo(b)
	target := exe
	if c.land {
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

	var took, again, gap, successor, waitMax, silentMax []time.Duration
	refused, changed := 0, 0
	for b.Loop() {
		if c.land {
			b.StopTimer()
			if err := landBinary(exe, target); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		var stalled net.Conn
		if c.stall {
			b.StopTimer()
			var err error
			if stalled, err = w.stall(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		r, err := w.upgradeOnce(target, max(c.asks, 1))
		if stalled != nil {
			stalled.Close()
		}
		if err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		took, again, gap, waitMax = append(took, r.took...), append(again, r.again...), append(gap, r.gap...), append(waitMax, r.waitMax)
		successor, silentMax = append(successor, r.successor...), append(silentMax, r.silentMax)
		refused += r.refused
		for _, err := range r.errs {
			b.Logf("a status refused during an upgrade: %v", err)
		}
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

	logPhases(b, s.log.Name())
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
	reportDurations(b, "successor-", successor)
	b.ReportMetric(millis(quantile(waitMax, 1)), "wait-max-ms")
	b.ReportMetric(millis(quantile(silentMax, 1)), "silent-max-ms")
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

// upgradeResult is one call of upgradeOnce as it saw it: took, again,
// gap and successor hold one figure for each upgrade asked.
type upgradeResult struct {
	took, again, gap, successor []time.Duration
	errs                        []error        // the refusals
	asked                       [][2]time.Time // each status asked: when, and when answered
	silentMax                   time.Duration  // the longest wait of a status asked during a handover
	waitMax                     time.Duration
	refused                     int
}

// upgradeOnce asks the world's service for asks upgrades to exe at the
// same moment, with four clients asking for the status meanwhile, and
// returns when the last successor serves and every client has seen it.
func (w *svcWorld) upgradeOnce(exe string, asks int) (upgradeResult, error) {
	var r upgradeResult
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := make([]string, asks)
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
	}
	var mu sync.Mutex
	first := map[string]time.Time{}  // each upgrade's successor's first answer
	paused := map[string]time.Time{} // each upgrade's first answer after its pause
	ups := map[string]api.Upgrade{}  // each upgrade, as its successor told it
	seen := 0                        // clients that have had an answer from the last successor
	var wg sync.WaitGroup
	begin := time.Now()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				// The wait ends with the answer's first byte: the
				// client's own decode of some 60 kB, on the same two
				// cores, is not the API's.
				var t1 time.Time
				trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
					GotFirstResponseByte: func() { t1 = time.Now() },
				})
				t0 := time.Now()
				st, err := w.client.Status(trace)
				if t1.IsZero() {
					t1 = time.Now()
				}
				mu.Lock()
				r.waitMax = max(r.waitMax, t1.Sub(t0))
				r.asked = append(r.asked, [2]time.Time{t0, t1})
				if err != nil {
					r.refused++
					r.errs = append(r.errs, fmt.Errorf("after %v (%s, sent %s): %w", t1.Sub(begin), t1.Format("15:04:05.000000"), t0.Format("15:04:05.000000"), err))
				}
				var u *api.Upgrade
				if err == nil && st.Service != nil {
					u = st.Service.Upgrade
				}
				successor := u != nil && slices.Contains(ids, u.ID) && u.Took > 0
				if u != nil && slices.Contains(ids, u.ID) && u.Paused > 0 {
					if f, ok := paused[u.ID]; !ok || t1.Before(f) {
						paused[u.ID] = t1
					}
				}
				if successor {
					if f, ok := first[u.ID]; !ok || t1.Before(f) {
						first[u.ID] = t1
						ups[u.ID] = *u
					}
				}
				// Once every upgrade's successor has answered, any
				// answer from one is the last's: the others have
				// handed over to it.
				last := successor && len(first) == len(ids)
				if last {
					seen++
				}
				mu.Unlock()
				if last {
					return
				}
				time.Sleep(hammerEvery)
			}
		})
	}
	errs := make([]error, asks)
	var asked sync.WaitGroup
	for i, id := range ids {
		asked.Go(func() { errs[i] = w.askUpgrade(ctx, api.UpgradeRequest{Executable: exe, ID: id}) })
	}
	asked.Wait()
	if err := errors.Join(errs...); err != nil {
		cancel()
		wg.Wait()
		return r, fmt.Errorf("upgrade: %w", err)
	}
	wg.Wait()
	if seen < 4 {
		return r, fmt.Errorf("the successor did not answer within a minute")
	}
	for _, id := range ids {
		u := ups[id]
		if u.Error != nil {
			return r, u.Error
		}
		r.took = append(r.took, u.Took)
		r.again = append(r.again, first[id].Sub(begin))
		pause := u.Began.Add(u.Paused)
		r.gap = append(r.gap, paused[id].Sub(pause))
		for _, a := range r.asked {
			if !a[0].Before(pause) && a[0].Before(first[id]) {
				r.silentMax = max(r.silentMax, a[1].Sub(a[0]))
			}
		}
		r.successor = append(r.successor, first[id].Sub(u.Began.Add(u.Paused)))
	}
	return r, nil
}

// askUpgrade asks the world's service for the upgrade req, asking again
// every 5 ms while another upgrade hands over, as "service upgrade" does
// (the request then queues until the successor answers it), until ctx's
// deadline.
func (w *svcWorld) askUpgrade(ctx context.Context, req api.UpgradeRequest) error {
	deadline, _ := ctx.Deadline()
	var err error
	testproc.UntilEvery(time.Until(deadline), 5*time.Millisecond, func() bool {
		_, err = w.client.Upgrade(ctx, req)
		var ae *api.Error
		return !errors.As(err, &ae) || ae.Code != api.CodeHandingOver
	})
	return err
}

// logPhases logs the phases of the handovers the service at log logged
// (each successor logs its timeline, step by step from the request, with
// the CPU time the process used since the step before): for each step
// from the pause on, the median CPU time since the step before and
// since the pause (the steps' CPU times summed, each handover's own),
// and the median and the longest wall time since the step before and
// since the pause. On a loaded machine a phase's wall time is mostly waiting for a
// core; its CPU time says where the silence goes.
func logPhases(b *testing.B, log string) {
	b.Helper()
	raw, err := os.ReadFile(log)
	if err != nil {
		b.Logf("phases: %v", err)
		return
	}
	var order []string
	cpu := map[string][]time.Duration{}
	cpuFromPause := map[string][]time.Duration{} // the CPU time of the steps since the pause, summed
	since := map[string][]time.Duration{}        // from the step before
	fromPause := map[string][]time.Duration{}
	n := 0
	for line := range strings.Lines(string(raw)) {
		_, rest, ok := strings.Cut(line, " taken over on ")
		if !ok {
			continue
		}
		_, rest, ok = strings.Cut(rest, ": ")
		if !ok {
			continue
		}
		steps, _, ok := strings.Cut(rest, ") with ")
		if !ok {
			continue
		}
		n++
		var prev, paused, used time.Duration
		seenPause, counted := false, true
		for st := range strings.SplitSeq(steps, ", ") {
			st, spent, _ := strings.Cut(st, " (+")
			i := strings.LastIndexByte(st, ' ')
			if i < 0 {
				continue
			}
			name := st[:i]
			at, err := time.ParseDuration(st[i+1:])
			if err != nil {
				continue
			}
			if name == string(upgrade.StepPaused) {
				seenPause, paused = true, at
			} else if seenPause {
				if !slices.Contains(order, name) {
					order = append(order, name)
				}
				d, err := time.ParseDuration(strings.TrimSuffix(spent, " cpu)"))
				if err == nil {
					cpu[name] = append(cpu[name], d)
					used += d
				}
				// A step without its CPU time leaves the sum unknown.
				if counted = counted && err == nil; counted {
					cpuFromPause[name] = append(cpuFromPause[name], used)
				}
				since[name] = append(since[name], at-prev)
				fromPause[name] = append(fromPause[name], at-paused)
			}
			prev = at
		}
	}
	if len(order) == 0 {
		b.Logf("phases: no handover timeline in the service's log")
		return
	}
	ms := func(ds []time.Duration, q float64) string {
		if len(ds) == 0 {
			return "     -"
		}
		return fmt.Sprintf("%6.2f", millis(quantile(ds, q)))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "phases of %d handovers, ms: cpu since the step before, since the pause (p50 / p50); wall since the step before (p50 / max); since the pause (p50 / max)\n", n)
	for _, name := range order {
		fmt.Fprintf(&s, "  %-18s %s / %s; %s / %s; %s / %s\n", name, ms(cpu[name], 0.5), ms(cpuFromPause[name], 0.5),
			ms(since[name], 0.5), ms(since[name], 1), ms(fromPause[name], 0.5), ms(fromPause[name], 1))
	}
	b.Log(s.String())
}
