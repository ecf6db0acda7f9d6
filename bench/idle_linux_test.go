package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// idleEnv sets the idle period of BenchmarkGuardianIdle and
// BenchmarkServiceIdle, a Go duration.
const idleEnv = "TETHER_BENCH_IDLE"

// defaultIdle is the idle period asked for: context switches over 30 s.
const defaultIdle = 30 * time.Second

// settle is how long the guardians are left alone before the idle period
// begins, so the period starts in the steady state, not in the wake of a
// start.
const settle = time.Second

// BenchmarkGuardianIdle measures what an idle guardian costs: its resident
// memory (VmRSS) and how often its threads leave the CPU (voluntary plus
// involuntary context switches, summed over /proc/<pid>/task/*) while its
// agent runs and nothing happens. Every iteration starts one more session;
// after the loop all of them idle together through one period (see
// idleEnv), so fifty guardians cost one period, not fifty.
//
// Metrics, over the guardians: rss-p50-MiB and rss-max-MiB at the end of
// the period, ctxsw-p50/30s and ctxsw-max/30s, scaled to 30 s.
func BenchmarkGuardianIdle(b *testing.B) {
	idle := idlePeriod(b)
	spec := shellSpec(b, "")
	u := newUndo(b)
	var ss []*session
	for i := 0; b.Loop(); i++ {
		spec.Identity = fmt.Sprintf("bench-idle-%d@local", i)
		s, err := guardian.Start(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		ss = append(ss, track(u, s))
	}

	time.Sleep(settle)
	before := make([]int64, len(ss))
	for i, r := range ss {
		n, err := contextSwitches(r.s.Ready().GuardianPID)
		if err != nil {
			b.Fatal(err)
		}
		before[i] = n
	}
	begin := time.Now()
	time.Sleep(idle)
	elapsed := time.Since(begin)
	per30s := make([]float64, len(ss))
	rss := make([]float64, len(ss))
	for i, r := range ss {
		select {
		case <-r.s.Done():
			b.Fatalf("guardian pid %d of %q exited while idle", r.s.Ready().GuardianPID, r.s.Identity())
		default:
		}
		pid := r.s.Ready().GuardianPID
		n, err := contextSwitches(pid)
		if err != nil {
			b.Fatal(err)
		}
		per30s[i] = float64(n-before[i]) * float64(30*time.Second) / float64(elapsed)
		if rss[i], err = rssMiB(pid); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range ss {
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		r.closeAll()
		u.drop(r.undoKey)
	}

	b.ReportMetric(quantile(rss, 0.5), "rss-p50-MiB")
	b.ReportMetric(quantile(rss, 1), "rss-max-MiB")
	b.ReportMetric(quantile(per30s, 0.5), "ctxsw-p50/30s")
	b.ReportMetric(quantile(per30s, 1), "ctxsw-max/30s")
	checkTarget(b, "max guardian RSS", quantile(rss, 1), 6, "MiB")
}

// svcSettle is how long after the last start the window of
// BenchmarkServiceIdle begins.
const svcSettle = 3 * time.Second

// BenchmarkServiceIdle measures how often every tether process wakes
// while a service's agents run and nothing happens: the service, the
// guardian of each agent and the warm guardians of its pool. Each
// sub-benchmark is one service lifetime with 1 or 20 agents (each a tree
// of two sleeps, autostarted); every iteration stops them all and starts
// them again through the API, in one call each. The idle period (30 s,
// see idleEnv) begins svcSettle after the last start and counts the
// context switches (voluntary and involuntary, every thread) of every
// process the service runs from the tether binary.
//
// Metrics: ctxsw/30s, all of them together; service-ctxsw/30s,
// guardians-ctxsw/30s (the agents'), pool-ctxsw/30s (the warm ones), each
// scaled to 30 s; procs, how many processes were counted. Every process
// that woke is logged with its count.
func BenchmarkServiceIdle(b *testing.B) {
	idle := idlePeriod(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("agents=%d", n), func(b *testing.B) { serviceIdle(b, exe, n, idle) })
	}
}

func serviceIdle(b *testing.B, exe string, n int, idle time.Duration) {
	w := newSvcWorld(b, n)
	u := newUndo(b)
	s, err := w.startService(exe)
	if err != nil {
		b.Fatal(err)
	}
	undoKey := u.add(s.abort)
	if _, err := s.waitRunning(upLimit); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	var rows []api.Agent
	var last time.Time
	for b.Loop() {
		if err := w.act(w.client.Stop, api.StateStopped); err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		if err := w.act(w.client.Start, api.StateRunning); err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		last = time.Now()
	}
	// The rows say which guardians run agents: asked for before the
	// window, as any question wakes the service. The question measures
	// what each agent costs, so a measurement that left a timer behind
	// would show in the window.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	st, err := w.client.StatusWithUsage(ctx)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range st.Agents {
		if r.ID != probeID {
			rows = append(rows, r)
		}
	}
	time.Sleep(time.Until(last.Add(svcSettle)))

	procs, err := tetherProcs(s.cmd.Process.Pid, exe, rows)
	if err != nil {
		b.Fatal(err)
	}
	before := make([]int64, len(procs))
	for i, p := range procs {
		if before[i], err = contextSwitches(p.pid); err != nil {
			b.Fatalf("%s pid %d: %v", p.role, p.pid, err)
		}
	}
	begin := time.Now()
	time.Sleep(idle)
	elapsed := time.Since(begin)
	sums := map[string]float64{}
	var all float64
	for i, p := range procs {
		after, err := contextSwitches(p.pid)
		if err != nil {
			b.Fatalf("%s pid %d is gone after the idle period: %v", p.role, p.pid, err)
		}
		d := float64(after-before[i]) * float64(30*time.Second) / float64(elapsed)
		sums[p.role] += d
		all += d
		if after > before[i] {
			b.Logf("%s pid %d woke %d times in %v", p.role, p.pid, after-before[i], elapsed.Round(time.Millisecond))
		}
	}
	if now, err := tetherProcs(s.cmd.Process.Pid, exe, rows); err != nil || len(now) != len(procs) {
		b.Fatalf("the service's processes changed while idle: %d before, %d after (%v)", len(procs), len(now), err)
	}

	if err := s.quit(); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	u.drop(undoKey)

	b.ReportMetric(all, "ctxsw/30s")
	b.ReportMetric(sums[roleService], "service-ctxsw/30s")
	b.ReportMetric(sums[roleGuardian], "guardians-ctxsw/30s")
	b.ReportMetric(sums[rolePool], "pool-ctxsw/30s")
	b.ReportMetric(float64(len(procs)), "procs")
	checkTarget(b, "idle context switches of every tether process", all, 0, "per 30 s")
}

// idlePeriod is the idle period asked for (see idleEnv).
func idlePeriod(b *testing.B) time.Duration {
	idle := defaultIdle
	if v := os.Getenv(idleEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive Go duration such as 30s", idleEnv, v)
		}
		idle = d
	}
	return idle
}

// The roles of tetherProcs.
const (
	roleService  = "service"
	roleGuardian = "guardian"
	rolePool     = "pool guardian"
)

type tetherProc struct {
	pid  int
	role string
}

// tetherProcs returns the service, which runs exe, and every guardian
// it runs: those of rows, and the others, the warm guardians of its pool.
func tetherProcs(service int, exe string, rows []api.Agent) ([]tetherProc, error) {
	running := map[int]bool{}
	for _, r := range rows {
		running[r.GuardianPID] = true
	}
	procs, err := punix.Processes()
	if err != nil {
		return nil, err
	}
	out := []tetherProc{{service, roleService}}
	// The guardians run the program the service picks for them.
	prog := guardian.ProgramFor(exe).Path
	for _, p := range procs {
		if p.PPid != service || p.Zombie() {
			continue
		}
		if path, err := os.Readlink("/proc/" + strconv.Itoa(p.Pid) + "/exe"); err != nil || path != prog {
			continue
		}
		role := rolePool
		if running[p.Pid] {
			role = roleGuardian
		}
		out = append(out, tetherProc{p.Pid, role})
	}
	return out, nil
}

// act applies an action of the API (Start, Stop) to all the world's
// agents but the probe in one call and checks that each ends in state.
func (w *svcWorld) act(action func(context.Context, ...string) (api.Results, error), state api.State) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := action(ctx, w.ids...)
	if err != nil {
		return err
	}
	for _, r := range res.Results {
		if err := resultIn(r, state); err != nil {
			return err
		}
	}
	return nil
}

// quit ends the service with SIGTERM, which stops every agent, and
// waits for it and for anything it left to this process.
func (s *svc) quit() error {
	if err := s.cmd.Process.Signal(unix.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		return fmt.Errorf("the service did not exit within %v of SIGTERM", waitLimit)
	}
	s.log.Close()
	if left := reapOrphans(waitLimit); len(left) > 0 {
		return fmt.Errorf("%d process(es) outlived the service and were killed: %v", len(left), left)
	}
	return nil
}
