package jepsen

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// The harness's own tests.

// startOne starts a run of one host whose agent runs, and returns both.
func startOne(t *testing.T) (*run, *host, history.Execution) {
	c := etcdtest.Start(t, 1)
	r := newRun(t, c, seeded(t), 1)
	h := r.hosts[0]
	h.start()
	if res := h.run(time.Minute, "start", agentID); res.code != 0 {
		t.Fatalf("start: exit %d %s%s", res.code, res.stdout, res.stderr)
	}
	var run []history.Execution
	testproc.Eventually(t, 30*time.Second, func() bool {
		run = r.running()
		return len(run) == 1
	}, "the agent never started: %v", r.executions())
	return r, h, run[0]
}

// A host that dies takes all of its processes with it at once: the
// service, the guardian and the agent, which wrote no end; the watcher
// saw it gone right after, and the histories say so.
func TestHostDiesWhole(t *testing.T) {
	r, h, e := startOne(t)
	tree := h.tree()
	if len(tree) < 3 {
		t.Fatalf("the host's tree is %v: want the service, a guardian and the agent", tree)
	}
	var refs []punix.Ref
	for _, pid := range tree {
		p, err := punix.Stat(pid)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, p.Ref())
	}
	died := h.die()
	for _, ref := range refs {
		if punix.Alive(ref) {
			t.Errorf("pid %d outlived its host", ref.Pid)
		}
	}
	testproc.Eventually(t, 10*time.Second, func() bool {
		return r.execution(e.Proc).End != history.Running
	}, "the watcher never saw the agent gone: %v", r.execution(e.Proc))
	got := r.execution(e.Proc)
	if !got.Seen {
		t.Errorf("the agent wrote an end of its own, killed with its host: %v", got)
	}
	if d := seconds(got.End - died); d < 0 || d > time.Second {
		t.Errorf("the agent was seen gone %v after its host died", d)
	}
}

// An agent stopped politely writes its own end, which the checker keeps
// over the watcher's later sight of it gone.
func TestAgentWritesItsEnd(t *testing.T) {
	r, h, e := startOne(t)
	if res := h.run(time.Minute, "stop", agentID); res.code != 0 {
		t.Fatalf("stop: exit %d %s%s", res.code, res.stdout, res.stderr)
	}
	var goneSeen bool
	testproc.Eventually(t, 10*time.Second, func() bool {
		for _, rec := range r.records() {
			goneSeen = goneSeen || rec.Kind == history.Gone && rec.Proc() == e.Proc
		}
		return goneSeen
	}, "the watcher never saw the stopped agent gone")
	if got := r.execution(e.Proc); got.End == history.Running || got.Seen {
		t.Errorf("the stopped agent's end is not its own: %v", got)
	}
}
