package history

import (
	"testing"
	"time"
)

// Now grows as time passes, at the rate of Go's own monotonic clock.
func TestNow(t *testing.T) {
	a, t0 := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	b, el := Now(), time.Since(t0)
	if d := time.Duration(b - a); d < 20*time.Millisecond || d > el+5*time.Millisecond {
		t.Fatalf("Now moved %v while %v passed", d, el)
	}
}
