package bench

import (
	"cmp"
	"math"
	"slices"
	"testing"
	"time"
)

// quantile returns the nearest-rank q-quantile (0 < q <= 1) of xs, which
// must not be empty.
func quantile[T cmp.Ordered](xs []T, q float64) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// millis converts d to fractional milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportDurations reports the median and the maximum of ds in
// milliseconds, as prefix+"p50-ms" and prefix+"max-ms".
func reportDurations(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	b.ReportMetric(millis(quantile(ds, 0.5)), prefix+"p50-ms")
	b.ReportMetric(millis(quantile(ds, 1)), prefix+"max-ms")
}

// checkTarget logs a missed target; the benchmarks measure, they do not
// fail on a slow machine.
func checkTarget(b *testing.B, what string, got, limit float64, unit string) {
	b.Helper()
	if got > limit {
		b.Logf("target missed: %s is %.2f %s, target <= %.2f %s", what, got, unit, limit, unit)
	}
}
