package jepsen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/internal/testproc"
)

// run is one schedule: hosts sharing one identity on a cluster, the
// watcher of their agents, and the check of their histories at the end.
type run struct {
	t        testing.TB
	c        *etcdtest.Cluster
	rng      *rand.Rand
	identity string
	hosts    []*host
	w        *watcher
	keys     *keyWatch
	// fenced lets an overlap pass when the later holder's token is
	// higher: the case of a holder paused longer than the ttl.
	fenced bool
	report *history.Report
}

// newRun lays out n hosts (h1, h2, ...) on the cluster c and watches
// their agents; the checker runs when the test ends, after every host
// has stopped. The hosts' services are not started.
func newRun(t testing.TB, c *etcdtest.Cluster, rng *rand.Rand, n int) *run {
	t.Helper()
	// Short: the hosts' runtime directories hold unix sockets.
	dir, err := os.MkdirTemp("", "tj-")
	if err != nil {
		t.Fatal(err)
	}
	tag := strconv.FormatUint(rng.Uint64()>>16, 36)
	r := &run{t: t, c: c, rng: rng, identity: "agent-" + tag + "@relay"}
	// Registered first, so that it runs last: after every host has
	// stopped, the histories are whole.
	t.Cleanup(func() {
		defer os.RemoveAll(dir)
		r.finish()
		if t.Failed() {
			for _, h := range r.hosts {
				t.Logf("%s's service log:\n%s", h.name, h.output())
			}
		}
	})
	prefix := "/jepsen-" + tag
	if r.keys, err = watchKeys(c.Endpoints(), prefix+"/identities/"); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range n {
		h := newHost(t, c, dir, fmt.Sprintf("h%d", i+1), r.identity, prefix)
		r.hosts = append(r.hosts, h)
		files = append(files, h.history)
	}
	r.w = watch(filepath.Join(dir, "watcher"), files...)
	return r
}

// finish stops every host, waits for every agent to be gone, and checks
// the histories.
func (r *run) finish() {
	for _, h := range r.hosts {
		h.cleanup()
	}
	if r.keys != nil {
		r.keys.close()
	}
	if r.w == nil {
		return // the run failed before it watched anything
	}
	if err := r.w.close(30 * time.Second); err != nil {
		r.t.Errorf("watching the agents: %v", err)
	}
	recs := r.records()
	rep, err := history.Check(recs, history.Options{AllowFenced: r.fenced, RequireFence: true})
	if err != nil {
		r.t.Errorf("the histories: %v", err)
		return
	}
	r.report = rep
	if err := rep.Err(); err != nil {
		r.t.Errorf("the checker: %v", err)
	}
	for _, o := range rep.Overlaps {
		r.t.Logf("overlap (fenced: %v): %v", o.Fenced(), o)
	}
	if r.t.Failed() {
		for _, e := range rep.Executions {
			r.t.Logf("execution: %v", e)
		}
	}
}

// records are every record of the run so far.
func (r *run) records() []history.Record {
	r.t.Helper()
	var out []history.Record
	for _, f := range r.w.all() {
		recs, err := readHistory(f)
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

// executions are the run's executions so far, by start.
func (r *run) executions() []history.Execution {
	r.t.Helper()
	ex, err := history.Executions(r.records())
	if err != nil {
		r.t.Fatal(err)
	}
	return ex
}

// running are the executions not yet ended.
func (r *run) running() []history.Execution {
	var out []history.Execution
	for _, e := range r.executions() {
		if e.End == history.Running {
			out = append(out, e)
		}
	}
	return out
}

// host is the host named name.
func (r *run) host(name string) *host {
	for _, h := range r.hosts {
		if h.name == name {
			return h
		}
	}
	r.t.Fatalf("no host %s", name)
	return nil
}

// waitHolder waits, at most within, until an execution runs, and
// returns it and its host; it fails the test if more than one runs.
func (r *run) waitHolder(within time.Duration) (history.Execution, *host) {
	r.t.Helper()
	var run []history.Execution
	if !testproc.UntilEvery(within, 10*time.Millisecond, func() bool {
		run = r.running()
		return len(run) > 0
	}) {
		r.t.Fatalf("no execution of %s runs %v after: %v; the hosts' rows:%s", r.identity, within, r.executions(), r.rows())
	}
	if len(run) > 1 {
		r.t.Fatalf("%d executions of %s run at once: %v", len(run), r.identity, run)
	}
	return run[0], r.host(run[0].Host)
}

// waitStart waits, at most within, until an execution starts after the
// monotonic time after, and returns it.
func (r *run) waitStart(within time.Duration, after int64) history.Execution {
	r.t.Helper()
	var got history.Execution
	if !testproc.UntilEvery(within, 5*time.Millisecond, func() bool {
		for _, e := range r.executions() {
			if e.Start > after {
				got = e
				return true
			}
		}
		return false
	}) {
		r.t.Fatalf("no execution of %s started within %v: %v; the hosts' rows:%s", r.identity, within, r.executions(), r.rows())
	}
	return got
}

// rows are the hosts' rows of the agent, for messages.
func (r *run) rows() string {
	var b strings.Builder
	for _, h := range r.hosts {
		a := h.agent()
		fmt.Fprintf(&b, "\n\t%s: %s %q", h.name, a.State, a.Status)
		if a.Error != nil {
			fmt.Fprintf(&b, " (%s: %s)", a.Error.Code, a.Error.Message)
		}
	}
	return b.String()
}

// execution is the execution of proc, as the histories say now.
func (r *run) execution(p history.Proc) history.Execution {
	r.t.Helper()
	for _, e := range r.executions() {
		if e.Proc == p {
			return e
		}
	}
	r.t.Fatalf("no execution of pid %d", p.PID)
	return history.Execution{}
}

// others are the hosts but h.
func (r *run) others(h *host) []*host {
	var out []*host
	for _, o := range r.hosts {
		if o != h {
			out = append(out, o)
		}
	}
	return out
}

// seconds is ns (a difference of monotonic times) as a duration.
func seconds(ns int64) time.Duration { return time.Duration(ns) }
