package service

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
)

// A crash loop is crash_loop's failures within its window; older ones
// drop out of the count, and no crash_loop never parks.
func TestCrashLoopWindow(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a := &actor{cfg: config.Agent{Retry: config.Retry{CrashLoop: config.CrashLoop{Failures: 3, Within: time.Minute}}}}
	for i, tc := range []struct {
		at   int
		loop bool
	}{
		{0, false}, {10, false}, {65, false}, // the first is out of the window at the third
		{70, true}, // 10, 65, 70
	} {
		if got := a.crashLoop(at(tc.at)); got != tc.loop {
			t.Errorf("failure %d at %ds: crash loop %v, want %v", i, tc.at, got, tc.loop)
		}
	}
	never := &actor{cfg: config.Agent{Retry: config.DefaultRetry()}}
	for i := range 1000 {
		if never.crashLoop(at(i)) {
			t.Fatalf("the default parked at failure %d", i)
		}
	}
	if len(never.failures) != 0 {
		t.Errorf("the default keeps %d failures", len(never.failures))
	}
}
