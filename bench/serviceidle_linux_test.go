//go:build linux

package bench

import (
	"context"
	"testing"
	"time"
)

// idleAgents is how many agents BenchmarkServiceIdle runs.
const idleAgents = 10

// serviceSettle is how long the idle service is left alone before the
// idle period begins: past its first check of the agents' log sizes, due
// 30 s after an agent starts (the next, with the logs still, is a minute
// later), so that the period starts in the steady state.
const serviceSettle = 35 * time.Second

// BenchmarkServiceIdle measures how often an idle service wakes: the
// service of idleAgents running agents is asked for its status once, with
// what each agent costs (so a measurement that left a timer behind would
// show), left alone for serviceSettle, and then its threads' context
// switches (voluntary plus involuntary, summed over /proc/<pid>/task/*)
// are counted over the idle period (see idleEnv).
//
// Metric: svc-ctxsw/30s, scaled to 30 s. The loop does nothing: one
// service lifetime is one measure, whatever -benchtime says.
func BenchmarkServiceIdle(b *testing.B) {
	idle := idlePeriod(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorld(b, idleAgents)
	u := newUndo(b)
	s, err := w.startService(exe)
	if err != nil {
		b.Fatal(err)
	}
	undoKey := u.add(s.abort)
	up, err := s.waitRunning(upLimit)
	if err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	trees, err := waitTrees(up.rows, waitLimit)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = w.client.StatusWithUsage(ctx)
	cancel()
	if err != nil {
		b.Fatalf("status: %v", err)
	}
	for b.Loop() {
	}

	pid := s.cmd.Process.Pid
	time.Sleep(serviceSettle)
	before, err := contextSwitches(pid)
	if err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	time.Sleep(idle)
	elapsed := time.Since(begin)
	after, err := contextSwitches(pid)
	if err != nil {
		b.Fatal(err)
	}
	per30s := float64(after-before) * float64(30*time.Second) / float64(elapsed)

	if _, err := s.killAndWatch(trees, waitLimit); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	if err := s.finish(trees); err != nil {
		b.Fatal(err)
	}
	u.drop(undoKey)
	b.ReportMetric(per30s, "svc-ctxsw/30s")
}
