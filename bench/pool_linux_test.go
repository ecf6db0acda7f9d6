package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// BenchmarkStartToReadyPool is BenchmarkStartToReady the way the service
// starts agents: through a guardian.Pool, whose guardians were exec'd
// ahead of the request. The pool refills outside the timed region.
//
// Metrics: p50-ms and max-ms.
func BenchmarkStartToReadyPool(b *testing.B) {
	spec := shellSpec(b, "bench-pool@local")
	pool := guardian.NewPool(spec.Executable)
	b.Cleanup(pool.Close)
	spec.Executable = ""
	u := newUndo(b)
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		// Starts 20 ms apart (and a stop), as in a service that is not
		// starting agents in a burst: the pool keeps two guardians warm
		// and refills 25 ms after a start, so each start meets one.
		time.Sleep(20 * time.Millisecond)
		b.StartTimer()
		begin := time.Now()
		s, err := pool.Start(context.Background(), spec)
		d := time.Since(begin)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, d)
		r := track(u, s)
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		r.closeAll()
		u.drop(r.undoKey)
		b.StartTimer()
	}
	reportDurations(b, "", took)
	checkTarget(b, "median start to ready (warm guardian)", millis(quantile(took, 0.5)), 8, "ms")
}
