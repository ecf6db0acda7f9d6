package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// idleEnv sets the idle period of BenchmarkGuardianIdle, a Go duration.
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
	idle := defaultIdle
	if v := os.Getenv(idleEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("%s=%q: want a positive Go duration such as 30s", idleEnv, v)
		}
		idle = d
	}
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
