package jepsen

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/internal/testproc"
	"golang.org/x/sys/unix"
)

// Bounds of the scenarios. A host that dies whole is replaced within
// the ttl and a second, as the issue asks; after a partition the lease
// expires at most a ttl after the cut, and etcd's leader notices an
// expiry within half a second (its check of expired leases). Of a
// failover, tether's part (from the key's deletion to the agent's start)
// is always held to tetherPart; the whole is held to its bound only when
// etcd's part was on time, within etcdExpiry of the fault (D211).
const (
	deathFailover     = ttl + time.Second
	partitionFailover = ttl + 2*time.Second
	// tetherPart bounds the start on the waiting host after etcd let
	// the key go: its watch, its transaction, the guardian, the agent.
	tetherPart = time.Second
	// etcdExpiry is when etcd has let the key go at the latest, after
	// the fault, on a machine that runs it on time: the lease was last
	// renewed at the fault or before, and the leader checks for
	// expired leases every half second.
	etcdExpiry = ttl + 500*time.Millisecond
	// handoff bounds the start of a waiting host after the holder let
	// the identity go: an etcd watch wakes it, no polling.
	handoff = 2 * time.Second
	// settle bounds a holder's start after a fault heals (etcd elects a
	// leader, the lease of a holder that was cut off expires).
	settle = 3*ttl + 15*time.Second
)

// exitHeld is the exit code of a start that meets an identity held
// elsewhere.
const exitHeld = 4

// scenario is one fault injected into a run whose hosts all want the
// identity, at random times drawn from r.rng.
type scenario struct {
	name string
	// hosts is how many hosts the run has (2 or 3).
	hosts int
	// fenced: the scenario may overlap, and the checker checks the
	// tokens instead.
	fenced bool
	f      func(r *run, fig *figures)
}

var scenarios = []scenario{
	{"BothStart", 3, false, bothStart},
	{"HostDies", 2, false, hostDies},
	{"Partition", 2, false, partition},
	{"LeaderKilled", 2, false, leaderKilled},
	{"QuorumLost", 2, false, quorumLost},
	{"GuardianPaused", 2, false, guardianPaused},
	{"GuardianPausedPartitioned", 2, true, guardianPausedPartitioned},
	{"UpgradeHolder", 2, false, upgradeHolder},
	{"UpgradeWaiting", 2, false, upgradeWaiting},
}

// figures are what a schedule measured.
type figures struct {
	mu                sync.Mutex
	runs              int
	overlaps          int // that the checker failed
	fencedOverlaps    int // a paused holder's, each with a higher token after it
	deathFailover     []time.Duration
	partitionFailover []time.Duration
	// expiry is how long after a death or a cut etcd let the key go;
	// react, how long after that another host started the agent.
	expiry, react []time.Duration
	handoff       []time.Duration
	upgrades      int
}

func (f *figures) add(list *[]time.Duration, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*list = append(*list, d)
}

// TestScenarios runs each scenario once, with random timings: the short
// version of `make jepsen`, run by `make test`.
func TestScenarios(t *testing.T) {
	c := etcdtest.Start(t, 3)
	rng := seeded(t)
	var fig figures
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			schedule(t, c, rng, s, &fig)
		})
	}
	t.Log(fig.String())
}

// schedule runs the scenario s on a new run of the cluster c, and heals
// the cluster after it.
func schedule(t *testing.T, c *etcdtest.Cluster, rng *rand.Rand, s scenario, fig *figures) {
	var r *run
	// Cleanups run last first: the cluster heals before the hosts stop
	// (a service stops sooner with etcd to release its lease to), and
	// the figures are counted once the run's histories are checked.
	t.Cleanup(func() {
		if r == nil || r.report == nil || t.Skipped() {
			return
		}
		fig.mu.Lock()
		defer fig.mu.Unlock()
		fig.runs++
		for _, o := range r.report.Overlaps {
			if r.fenced && o.Fenced() {
				fig.fencedOverlaps++
			} else {
				fig.overlaps++
			}
		}
	})
	r = newRun(t, c, rng, s.hosts)
	t.Cleanup(func() { heal(c) })
	r.fenced = s.fenced
	s.f(r, fig)
}

// heal starts again every member of c that a scenario stopped.
func heal(c *etcdtest.Cluster) {
	for _, m := range c.Members {
		if !m.Running() {
			m.Restart()
		}
	}
}

// seeded returns a generator whose seed the test prints, taken from
// TETHER_JEPSEN_SEED when set, so that a failing schedule can be replayed.
func seeded(t testing.TB) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("TETHER_JEPSEN_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TETHER_JEPSEN_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with TETHER_JEPSEN_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// between is a random duration in [lo, hi).
func (r *run) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// pause sleeps for a random time in [lo, hi): the schedule's own timing,
// not a wait for a condition.
func (r *run) pause(lo, hi time.Duration) { time.Sleep(r.between(lo, hi)) }

// startAll starts every host's service, in a random order, then asks
// every host to start the agent at random moments close together: one
// answers that it started it, every other that the identity is held
// elsewhere, naming the holder, and waits. It returns the holder.
func (r *run) startAll() (history.Execution, *host) {
	r.t.Helper()
	order := slices.Clone(r.hosts)
	r.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, h := range order {
		h.start()
	}
	results := make([]result, len(order))
	delays := make([]time.Duration, len(order))
	for i := range order {
		delays[i] = r.between(0, 300*time.Millisecond)
	}
	var wg sync.WaitGroup
	for i, h := range order {
		wg.Go(func() {
			time.Sleep(delays[i])
			results[i] = h.run(time.Minute, "start", agentID)
		})
	}
	wg.Wait()
	holder, hh := r.waitHolder(30 * time.Second)
	for i, h := range order {
		res := results[i]
		switch {
		case h == hh && res.code != 0:
			r.t.Fatalf("%s holds the identity, and its start said: exit %d %s%s", h.name, res.code, res.stdout, res.stderr)
		case h != hh && (res.code != exitHeld || !strings.Contains(res.stdout+res.stderr, "held by "+hh.name+" ")):
			r.t.Fatalf("%s: start while %s holds the identity: exit %d %q%q; want exit %d naming %s", h.name, hh.name, res.code, res.stdout, res.stderr, exitHeld, hh.name)
		}
	}
	for _, h := range r.others(hh) {
		r.waitWaiting(h, hh, 10*time.Second)
	}
	return holder, hh
}

// waitWaiting waits until h's agent waits for the identity that holder
// holds: in state held_elsewhere, its status naming the holder.
func (r *run) waitWaiting(h, holder *host, within time.Duration) {
	r.t.Helper()
	var a api.Agent
	if !testproc.UntilEvery(within, 10*time.Millisecond, func() bool {
		a = h.agent()
		return a.State == api.StateHeldElsewhere && strings.Contains(a.Status, "held by "+holder.name+" ")
	}) {
		r.t.Fatalf("%s's agent does not wait naming %s: %+v", h.name, holder.name, a)
	}
}

// upgradeMode says what an upgrade may change.
type upgradeMode int

const (
	// keep: nothing else happens meanwhile, so no agent restarts and no
	// identity is let go.
	keep upgradeMode = iota
	// amidFault: a fault is under way, which may stop the tree by its
	// deadline whatever the upgrade does; only the histories judge.
	amidFault
)

// maybeUpgrade hot-upgrades h's service, with probability p.
func (r *run) maybeUpgrade(h *host, p float64, mode upgradeMode, fig *figures) {
	r.t.Helper()
	if r.rng.Float64() >= p {
		return
	}
	before := r.running()
	began := time.Now()
	h.upgrade()
	took := time.Since(began)
	fig.mu.Lock()
	fig.upgrades++
	fig.mu.Unlock()
	if after := r.running(); mode == keep && !slices.Equal(before, after) {
		r.t.Fatalf("the upgrade of %s (%v) changed what runs: %v, then %v", h.name, took, before, after)
	}
}

// bothStart: every host starts the identity; exactly one runs it, the
// others wait naming it, and when it stops the agent one of them starts
// it, woken by etcd.
func bothStart(r *run, fig *figures) {
	holder, h := r.startAll()
	r.pause(0, time.Second)
	if run := r.running(); len(run) != 1 || run[0].Proc != holder.Proc {
		r.t.Fatalf("after the starts, %v run; want %v alone", run, holder)
	}
	if res := h.run(time.Minute, "stop", agentID); res.code != 0 {
		r.t.Fatalf("%s: stop: exit %d %s%s", h.name, res.code, res.stdout, res.stderr)
	}
	old := r.execution(holder.Proc)
	next := r.waitStart(handoff+2*time.Second, holder.Start)
	if next.Host == h.name {
		r.t.Fatalf("the host that stopped the agent started it again: %v", next)
	}
	d := seconds(next.Start - old.End)
	fig.add(&fig.handoff, d)
	if d > handoff {
		r.t.Errorf("%s started the identity %v after %s let it go; want within %v", next.Host, d, h.name, handoff)
	}
	for _, o := range r.others(r.host(next.Host)) {
		if o != h {
			r.waitWaiting(o, r.host(next.Host), 10*time.Second)
		}
	}
}

// hostDies: the holder's host dies whole (its service, guardians and
// agents SIGKILLed at once); another takes over within ttl + 1 s.
func hostDies(r *run, fig *figures) {
	holder, h := r.startAll()
	r.maybeUpgrade(h, 0.5, keep, fig)
	r.pause(0, 2*time.Second)
	r.dieAndReplace(h, holder, fig)
}

// partition: the holder is cut from etcd; its tree is dead before its
// lease can expire (a ttl after the cut at the latest), and only then
// does another host start.
func partition(r *run, fig *figures) {
	holder, h := r.startAll()
	r.maybeUpgrade(h, 0.3, keep, fig)
	r.pause(0, 2*time.Second)
	cut := history.Now()
	h.proxy.Cut()
	next := r.waitStart(partitionFailover+10*time.Second, holder.Start)
	old := r.execution(holder.Proc)
	if old.End == history.Running || old.End > cut+int64(ttl) {
		r.t.Errorf("the partitioned holder's tree lived past the lease's latest expiry (%v after the cut): %v", ttl, old)
	}
	d := seconds(next.Start - cut)
	fig.add(&fig.partitionFailover, d)
	r.checkFailover(cut, next, fig, h.name+" was cut off", partitionFailover)
	r.pause(0, 2*time.Second)
	h.proxy.Restore()
	// Healed, the old holder waits for the new one.
	r.waitWaiting(h, r.host(next.Host), settle)
}

// leaderKilled: etcd's leader is killed while an identity is held, and
// started again later; at most one host runs it throughout, and one runs
// it once etcd has a leader again.
func leaderKilled(r *run, fig *figures) {
	_, h := r.startAll()
	r.pause(0, time.Second)
	leader := r.c.Leader()
	leader.Kill()
	r.maybeUpgrade(h, 0.3, amidFault, fig)
	r.pause(0, 3*time.Second)
	leader.Restart()
	r.waitHolder(settle)
}

// quorumLost: two of the three members stop; no host can renew, and the
// holder's tree is dead a ttl after the loss at the latest; with quorum
// back, one host runs the identity again.
func quorumLost(r *run, fig *figures) {
	holder, _ := r.startAll()
	r.pause(0, time.Second)
	var stopped []*etcdtest.Member
	for _, i := range r.rng.Perm(len(r.c.Members))[:2] {
		m := r.c.Members[i]
		if r.rng.IntN(2) == 0 {
			m.Kill()
		} else {
			m.Stop()
		}
		stopped = append(stopped, m)
	}
	lost := history.Now()
	if !testproc.UntilEvery(ttl+5*time.Second, 10*time.Millisecond, func() bool {
		return r.execution(holder.Proc).End != history.Running
	}) {
		r.t.Fatalf("the holder still runs %v after quorum was lost: %v", ttl+5*time.Second, r.execution(holder.Proc))
	}
	if old := r.execution(holder.Proc); old.End > lost+int64(ttl) {
		r.t.Errorf("the holder's tree lived %v after quorum was lost; want under the ttl (%v): %v", seconds(old.End-lost), ttl, old)
	}
	r.pause(0, 2*time.Second)
	for _, m := range stopped {
		m.Restart()
	}
	r.waitHolder(settle)
}

// guardianPaused: the holder's guardian is stopped (SIGSTOP) for longer
// than the ttl while its service still renews the lease: the identity
// stays held, and no other host starts it.
func guardianPaused(r *run, fig *figures) {
	_, h := r.startAll()
	g := h.agent().GuardianPID
	if g <= 0 {
		r.t.Fatalf("%s's agent has no guardian: %+v", h.name, h.agent())
	}
	stopped := history.Now()
	if err := unix.Kill(g, unix.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	r.pause(ttl+500*time.Millisecond, ttl+2*time.Second)
	r.maybeUpgrade(h, 0.3, amidFault, fig)
	if err := unix.Kill(g, unix.SIGCONT); err != nil {
		r.t.Fatal(err)
	}
	for _, e := range r.executions() {
		if e.Start > stopped && e.Host != h.name {
			r.t.Fatalf("%s started the identity while %s's guardian was paused, its lease renewed: %v", e.Host, h.name, e)
		}
	}
	r.waitHolder(settle)
}

// guardianPausedPartitioned: the holder's guardian is stopped and its
// host cut from etcd for longer than the ttl. Nothing on the holder can
// stop its tree, the lease expires and another host starts the identity:
// the two overlap, which no lease can prevent, and the new holder's
// fencing token is higher, which is what lets a server refuse the old
// one. Once the guardian runs again, it stops its tree at once: its
// deadline is long past.
func guardianPausedPartitioned(r *run, fig *figures) {
	holder, h := r.startAll()
	g := h.agent().GuardianPID
	if g <= 0 {
		r.t.Fatalf("%s's agent has no guardian: %+v", h.name, h.agent())
	}
	if err := unix.Kill(g, unix.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	h.proxy.Cut()
	next := r.waitStart(partitionFailover+10*time.Second, holder.Start)
	if next.Fence <= holder.Fence {
		r.t.Errorf("the new holder's fencing token %d is not above the paused one's %d", next.Fence, holder.Fence)
	}
	r.pause(0, time.Second)
	cont := history.Now()
	if err := unix.Kill(g, unix.SIGCONT); err != nil {
		r.t.Fatal(err)
	}
	within := stopTimeout + 2*time.Second
	if !testproc.UntilEvery(within+5*time.Second, 5*time.Millisecond, func() bool {
		return r.execution(holder.Proc).End != history.Running
	}) {
		r.t.Fatalf("the paused holder's tree still runs after its guardian was continued: %v", r.execution(holder.Proc))
	}
	if old := r.execution(holder.Proc); seconds(old.End-cont) > within {
		r.t.Errorf("the paused holder's tree ended %v after its guardian was continued; want within %v", seconds(old.End-cont), within)
	}
	h.proxy.Restore()
	r.waitWaiting(h, r.host(next.Host), settle)
}

// upgradeHolder: the holder's service is upgraded in place, once or
// more: no agent restarts, no identity is let go, and the successor goes
// on renewing the lease, so that the identity is still held a ttl later;
// when the host then dies, another takes over as after any death.
func upgradeHolder(r *run, fig *figures) {
	holder, h := r.startAll()
	for range 1 + r.rng.IntN(3) {
		r.pause(0, time.Second)
		r.maybeUpgrade(h, 1, keep, fig)
	}
	// Longer than the ttl: the successor renews.
	r.pause(ttl, ttl+time.Second)
	if run := r.running(); len(run) != 1 || run[0].Proc != holder.Proc {
		r.t.Fatalf("after the upgrades, %v run; want %v alone, as before", run, holder)
	}
	r.dieAndReplace(h, holder, fig)
}

// upgradeWaiting: a host that waits for the identity is upgraded in
// place; its successor waits on, and takes over when the holder's host
// dies.
func upgradeWaiting(r *run, fig *figures) {
	holder, h := r.startAll()
	w := r.others(h)[0]
	for range 1 + r.rng.IntN(2) {
		r.pause(0, time.Second)
		r.maybeUpgrade(w, 1, keep, fig)
	}
	r.waitWaiting(w, h, 10*time.Second)
	r.dieAndReplace(h, holder, fig)
}

// dieAndReplace kills the holder's host h whole, and checks that another
// host takes over within ttl + 1 s.
func (r *run) dieAndReplace(h *host, holder history.Execution, fig *figures) {
	r.t.Helper()
	died := h.die()
	next := r.waitStart(deathFailover+10*time.Second, holder.Start)
	d := seconds(next.Start - died)
	fig.add(&fig.deathFailover, d)
	r.checkFailover(died, next, fig, h.name+" died", deathFailover)
}

// checkFailover checks the failover from the fault at t (what says
// which) to the start of next: tether's part against tetherPart, and
// the whole against bound unless etcd let the key go late, past
// etcdExpiry: then etcd's leader was not run on time, the machine is
// overloaded, and the whole is only logged (D211).
func (r *run) checkFailover(t int64, next history.Execution, fig *figures, what string, bound time.Duration) {
	r.t.Helper()
	d := seconds(next.Start - t)
	gone, ok := r.keys.goneAfter(t)
	if !ok || gone > next.Start {
		r.t.Logf("%s, %s took over %v later (the test's watch of the key saw no deletion before the start)", what, next.Host, d)
		if d > bound {
			r.t.Errorf("%s took over %v after %s; want within %v", next.Host, d, what, bound)
		}
		return
	}
	etcd, tether := seconds(gone-t), seconds(next.Start-gone)
	fig.add(&fig.expiry, etcd)
	fig.add(&fig.react, tether)
	split := fmt.Sprintf("etcd let the key go after %v, the start came %v later", etcd.Round(time.Millisecond), tether.Round(time.Millisecond))
	r.t.Logf("%s, %s took over %v later (%s)", what, next.Host, d, split)
	if load := loadPerCPU(); load > overloaded {
		if tether > tetherPart || d > bound {
			r.t.Logf("a load average of %.1f a processor: the machine is overloaded, and the failover is not held to %v, nor tether's part to %v", load, bound, tetherPart)
		}
		return
	}
	if tether > tetherPart {
		r.t.Errorf("%s started the agent %v after etcd let the key go (%s); want within %v", next.Host, tether, what, tetherPart)
	}
	switch {
	case etcd > etcdExpiry:
		r.t.Logf("etcd let the key go %v after the fault, later than the ttl and its check (%v): the machine is overloaded, and the whole failover is not held to %v", etcd, etcdExpiry, bound)
	case d > bound:
		r.t.Errorf("%s took over %v after %s (%s); want within %v", next.Host, d, what, split, bound)
	}
}

// overloaded is the load average a processor above which a failover's
// times are logged, not checked: runnable work four times the
// processors delays every process, etcd's and tether's alike (D211).
const overloaded = 4

// loadPerCPU is the one-minute load average a processor, 0 when it
// cannot be read.
func loadPerCPU() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return l / float64(runtime.NumCPU())
}

// String is the figures, as make jepsen prints them.
func (f *figures) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("runs %d, overlaps found %d (and %d of paused holders, each fenced), upgrades %d\n"+
		"failover after a host's death: %s\nfailover after a partition: %s\n"+
		"of both, etcd letting the key go: %s; then the start: %s\nstart after a release: %s",
		f.runs, f.overlaps, f.fencedOverlaps, f.upgrades,
		spread(f.deathFailover), spread(f.partitionFailover), spread(f.expiry), spread(f.react), spread(f.handoff))
}

// spread is the median and the worst of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %v, worst %v (%d)", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), len(s))
}
