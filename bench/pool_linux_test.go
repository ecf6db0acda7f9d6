//go:build linux

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
)

// BenchmarkStartToReadyPool is BenchmarkStartToReady the way the service
// starts agents: through a guardian.Pool, whose guardian was exec'd ahead
// of the request. The pool refills outside the timed region (each start
// waits for the next warm guardian before timing).
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
		// Let the refill finish: a start then meets a warm guardian,
		// as it does in a service that is not starting agents in a burst.
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
