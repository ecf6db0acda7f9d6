package bench

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"golang.org/x/sys/unix"
)

// stopTarget is how long, at most, the median polite tree may live after
// the API's stop request.
const stopTarget = 3 * time.Millisecond

// BenchmarkStopPolite measures a stop over the API of a polite tree: an
// escapingScript agent (bash, a worker in a process group of its own, a
// double-forked escapee in a session of its own), all of which die of
// SIGTERM. Each iteration starts the agent through the API, untimed,
// waits until its tree is whole and then times, from just before
// client.Client.Stop is called, until every process of the tree has exited
// (zombies count as dead), by poll(2) on their pidfds. The call's own
// answer comes later (the private directory, the lock and the synced
// intent come first); it is waited for, untimed, before the next start.
//
// Metrics: p50-ms and max-ms (tree gone), answer-p50-ms and
// answer-max-ms (the call's return).
func BenchmarkStopPolite(b *testing.B) {
	w, s, u, undoKey, marker := escapingWorld(b, "stop", "never")
	var gone, answered []time.Duration
	for b.Loop() {
		b.StopTimer()
		_, procs := startEscaping(b, w, s, marker)
		b.StartTimer()
		begin := time.Now()
		res := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			r, err := w.client.Stop(ctx, "x")
			if err == nil {
				err = wantState(r, api.StateStopped)
			}
			answered = append(answered, time.Since(begin))
			res <- err
		}()
		ok := waitExits(procs, begin.Add(waitLimit))
		d := time.Since(begin)
		b.StopTimer()
		if err := <-res; err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		if !ok {
			b.Fatalf("the tree of %s outlived its stop by %v", marker, waitLimit)
		}
		gone = append(gone, d)
		for _, p := range procs {
			unix.Close(int(p.Fd))
		}
		b.StartTimer()
	}
	if err := s.quit(); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	u.drop(undoKey)
	reportDurations(b, "", gone)
	reportDurations(b, "answer-", answered)
	checkTarget(b, "median stop request to the polite tree gone", millis(quantile(gone, 0.5)), millis(stopTarget), "ms")
}
