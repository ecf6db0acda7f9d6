package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The crash-torture test: two profiles whose configs share identities,
// polite and SIGTERM-ignoring agents, and random SIGKILL, SIGTERM and
// SIGSTOP/SIGCONT of the services, the guardians and the agents, also in
// the middle of a start handshake and of a teardown. A watcher samples
// every few milliseconds, for the whole run, that no identity ever has two
// live trees (I1); after each step the test checks, once things settle,
// that nothing outlived its owner (I2), that no private directory or lock
// is left over and that the durable intent is what the test asked for
// (I4).
//
// Inside "make test" it runs a few rounds; "make torture" runs many:
//
//	TETHER_TORTURE_ROUNDS  rounds to run (default 15)
//	TETHER_TORTURE_BUDGET  stop starting rounds after this long (default none)
//	TETHER_TORTURE_SEED    replay a run: the seed every message names

// tortureProfiles are the two services; their configs name the same
// identities, so they contend for them.
var tortureProfiles = []string{"one", "two"}

// torturePolite stops at the first SIGTERM; its child carries the marker
// too.
const torturePolite = `#!/bin/bash
(exec -a "$1-child" sleep 1000) &
echo "polite $1 up"
wait
`

// tortureStubborn ignores SIGTERM, and so does everything it starts; it
// has a worker in a process group of its own and an escapee that forked
// twice into a session of its own. Unlike misbehavingAgent, the escapee
// never has the bare marker as an argument, not even between its setsid
// and its exec, so a session leader with the bare marker as an argument
// is an agent tree's leader and nothing else.
const tortureStubborn = `#!/bin/bash
trap '' TERM
set -m
(exec -a "$1-worker" sleep 1000) &
set +m
(setsid bash -c 'exec -a "$0" sleep 1000' "$1-escapee" &)
echo "stubborn $1 up"
wait
`

// tortureAgent is one agent of both configs.
type tortureAgent struct {
	id       string
	stubborn bool
	stop     time.Duration
	marker   string
}

// tortureMargin is what the test allows beyond an agent's stop timeout
// for its tree to be gone after its owner's death (I2 promises 100 ms;
// shared, loaded machines need more).
const tortureMargin = time.Second

type torture struct {
	t      *testing.T
	w      *world
	rng    *rand.Rand
	seed   uint64
	agents []tortureAgent
	svcs   map[string]*service // live services
	// want is the intent the test asked for, per profile and id.
	want map[string]map[string]bool

	mu    sync.Mutex // guards what the watcher shares
	round int
	step  string

	watch *watcher

	// Figures.
	rounds      int
	kills       map[string]int
	maxCleanup  time.Duration
	cleanupWhat string
	steps       int
}

func TestCrashTorture(t *testing.T) {
	// make test runs a short torture with a fresh seed, printed for a
	// replay; make torture runs 1000 rounds.
	needTools(t, "bash", "setsid", "sleep")
	rounds := 15
	if s := os.Getenv("TETHER_TORTURE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TETHER_TORTURE_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	var budget time.Duration
	if s := os.Getenv("TETHER_TORTURE_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("TETHER_TORTURE_BUDGET=%q: %v", s, err)
		}
		budget = d
	}
	seed := rand.Uint64()
	if s := os.Getenv("TETHER_TORTURE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TETHER_TORTURE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d, %d rounds (replay with TETHER_TORTURE_SEED=%d)", seed, rounds, seed)

	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	tt := &torture{
		t: t, w: w, seed: seed,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		svcs:  map[string]*service{},
		want:  map[string]map[string]bool{},
		kills: map[string]int{},
		agents: []tortureAgent{
			{id: "polite", stop: time.Second},
			{id: "hardA", stubborn: true, stop: 200 * time.Millisecond},
			{id: "hardB", stubborn: true, stop: 300 * time.Millisecond},
		},
	}
	t.Cleanup(func() {
		if t.Failed() {
			tt.mu.Lock()
			t.Logf("FAILED in round %d, step %q: replay with TETHER_TORTURE_SEED=%d", tt.round, tt.step, seed)
			tt.mu.Unlock()
		}
	})
	scripts := map[bool]string{false: filepath.Join(w.dir, "polite.sh"), true: filepath.Join(w.dir, "stubborn.sh")}
	for stubborn, path := range scripts {
		body := map[bool]string{false: torturePolite, true: tortureStubborn}[stubborn]
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var cfg strings.Builder
	cfg.WriteString("agents:\n")
	for i := range tt.agents {
		a := &tt.agents[i]
		a.marker = m + "-" + a.id
		fmt.Fprintf(&cfg, `  - id: %s
    identity: %s@relay
    command: [bash, %s, %s]
    autostart: false
    restart: never
    stop_timeout: %v
`, a.id, a.id, scripts[a.stubborn], a.marker, a.stop)
	}
	for _, p := range tortureProfiles {
		if err := os.WriteFile(tt.configPath(p), []byte(cfg.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		tt.want[p] = map[string]bool{}
	}

	goroutines := runtime.NumGoroutine()
	tt.watch = startWatcher(t, tt)
	begin := time.Now()
	for round := range rounds {
		if budget > 0 && time.Since(begin) > budget {
			t.Logf("budget of %v spent after %d rounds", budget, round)
			break
		}
		tt.setStep(round, "restart everything")
		tt.oneRound()
		tt.rounds++
		if round%50 == 49 {
			t.Logf("%d rounds in %v", round+1, time.Since(begin).Round(time.Second))
		}
	}
	tt.setStep(tt.rounds, "shutdown")
	tt.shutdown()
	tt.watch.stop()
	tt.report(time.Since(begin))
	noGoroutineLeak(t, goroutines)
}

// noGoroutineLeak fails t when more goroutines than before run once every
// service has exited and the watcher has stopped.
func noGoroutineLeak(t *testing.T, before int) {
	t.Helper()
	if !testproc.UntilEvery(5*time.Second, 10*time.Millisecond, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before the run:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}

func (tt *torture) configPath(profile string) string {
	return filepath.Join(tt.w.dir, "config", profile+".yaml")
}

func (tt *torture) setStep(round int, step string) {
	tt.mu.Lock()
	tt.round, tt.step = round, step
	tt.mu.Unlock()
	tt.steps++
}

func (tt *torture) where() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return fmt.Sprintf("seed %d, round %d, step %q", tt.seed, tt.round, tt.step)
}

func (tt *torture) fatalf(format string, args ...any) {
	tt.t.Helper()
	tt.t.Fatalf("%s: %s", tt.where(), fmt.Sprintf(format, args...))
}

func (tt *torture) report(took time.Duration) {
	kinds := make([]string, 0, len(tt.kills))
	for k := range tt.kills {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n\t%-34s %d", k, tt.kills[k])
	}
	maxTrees, maxEscapees, samples := tt.watch.figures()
	tt.t.Logf("seed %d: %d rounds, %d steps in %v; %d watcher samples; max live trees per identity %d, max escapees per identity %d; max cleanup after an owner's death %v (%s); failures: %v; signals sent:%s",
		tt.seed, tt.rounds, tt.steps, took.Round(time.Millisecond), samples, maxTrees, maxEscapees,
		tt.maxCleanup.Round(time.Millisecond), tt.cleanupWhat, tt.t.Failed(), b.String())
}

// oneRound restarts whatever service is down, then does a few random
// steps, each followed by the checks.
func (tt *torture) oneRound() {
	for _, p := range tortureProfiles {
		if tt.svcs[p] == nil {
			tt.svcs[p] = tt.w.startServiceArgs(p, "--config", tt.configPath(p))
		}
	}
	tt.settle()
	for range 1 + tt.rng.IntN(3) {
		tt.randomStep()
		tt.settle()
	}
}

func (tt *torture) pickProfile() string { return tortureProfiles[tt.rng.IntN(len(tortureProfiles))] }
func (tt *torture) pickAgent() tortureAgent {
	return tt.agents[tt.rng.IntN(len(tt.agents))]
}

func (tt *torture) randomStep() {
	p := tt.pickProfile()
	if tt.svcs[p] == nil {
		p = tortureProfiles[0]
		if tt.svcs[p] == nil {
			p = tortureProfiles[1]
		}
		if tt.svcs[p] == nil {
			return
		}
	}
	a := tt.pickAgent()
	switch r := tt.rng.IntN(100); {
	case r < 25:
		tt.startAgent(p, a)
	case r < 37:
		tt.stopAgent(p, a)
	case r < 72:
		tt.signalSomething(p, a)
	case r < 86:
		tt.killDuringStart(p, a)
	default:
		tt.killDuringStop(p)
	}
}

func (tt *torture) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (tt *torture) startAgent(p string, a tortureAgent) {
	tt.setStep(tt.round, fmt.Sprintf("start %s in %s", a.id, p))
	ctx, cancel := tt.ctx()
	defer cancel()
	_, err := tt.w.client(p).Start(ctx, a.id)
	var ae *api.Error
	if err != nil && (!errors.As(err, &ae) || ae.Code != api.CodeContention) {
		tt.fatalf("start: %v", err)
	}
	tt.want[p][a.id] = true
}

func (tt *torture) stopAgent(p string, a tortureAgent) {
	tt.setStep(tt.round, fmt.Sprintf("stop %s in %s", a.id, p))
	ctx, cancel := tt.ctx()
	defer cancel()
	if _, err := tt.w.client(p).Stop(ctx, a.id); err != nil {
		tt.fatalf("stop: %v", err)
	}
	tt.want[p][a.id] = false
}

// status returns the rows of a live profile.
func (tt *torture) status(p string) (map[string]api.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := tt.w.client(p).Status(ctx)
	if err != nil {
		return nil, err
	}
	rows := map[string]api.Agent{}
	for _, a := range st.Agents {
		rows[a.ID] = a
	}
	return rows, nil
}

// signalSomething sends a random signal to the service of p, to the
// guardian of a, or to a's agent.
func (tt *torture) signalSomething(p string, a tortureAgent) {
	rows, err := tt.status(p)
	if err != nil {
		tt.fatalf("status of %s: %v", p, err)
	}
	row := rows[a.id]
	target := []string{"service", "guardian", "agent"}[tt.rng.IntN(3)]
	sig := []string{"SIGKILL", "SIGTERM", "SIGSTOP/SIGCONT"}[tt.rng.IntN(3)]
	var pid int
	switch target {
	case "service":
		pid = tt.svcs[p].cmd.Process.Pid
	case "guardian":
		pid = row.GuardianPID
	case "agent":
		pid = row.PID
	}
	if row.State != api.StateRunning && target != "service" {
		// Nothing to aim at: start it instead.
		tt.startAgent(p, a)
		return
	}
	tt.setStep(tt.round, fmt.Sprintf("%s the %s of %s (pid %d) in %s", sig, target, a.id, pid, p))
	tt.kills[sig+" "+target]++
	// The trees this signal may end, and how long they may take.
	owned, within := tt.treesOwnedBy(p, target, a)
	begin := time.Now()
	switch sig {
	case "SIGKILL":
		_ = unix.Kill(pid, unix.SIGKILL)
	case "SIGTERM":
		_ = unix.Kill(pid, unix.SIGTERM)
	default:
		_ = unix.Kill(pid, unix.SIGSTOP)
		time.Sleep(time.Duration(tt.rng.Int64N(int64(30 * time.Millisecond))))
		_ = unix.Kill(pid, unix.SIGCONT)
		return
	}
	switch {
	case target == "service":
		tt.serviceGone(p, sig == "SIGKILL", begin, owned, within)
	case target == "guardian" || sig == "SIGKILL" || !a.stubborn:
		// The tree's owner tears it down (a stubborn agent ignores
		// SIGTERM: then nothing ends).
		tt.waitGone(owned, begin, within, sig+" "+target)
	}
}

// treesOwnedBy returns the marked processes that live now and that the
// death of target would end: every tree of p for its service, a's tree
// otherwise; and the longest stop timeout among them plus the margin.
// A tree is p's when it descends from p's service (through a guardian,
// which is the subreaper of everything in it): a row that says starting
// does not make the other profile's tree of the identity p's.
func (tt *torture) treesOwnedBy(p, target string, a tortureAgent) (map[int]string, time.Duration) {
	rows, _ := tt.status(p)
	owned := map[int]string{}
	var within time.Duration
	svc := 0
	if s := tt.svcs[p]; s != nil {
		svc = s.cmd.Process.Pid
	}
	for _, ag := range tt.agents {
		if target != "service" && ag.id != a.id {
			continue
		}
		if r, ok := rows[ag.id]; !ok || r.State == api.StateStopped || r.State == api.StateFailed || r.State == api.StateBackoff {
			continue
		}
		for pid, c := range procsWith(ag.marker) {
			if descendsFrom(pid, svc) {
				owned[pid] = c
			}
		}
		within = max(within, ag.stop)
	}
	return owned, within + tortureMargin
}

// descendsFrom reports whether pid has ancestor among its parents (a
// process that has exited has no ancestry: it descends from nothing).
func descendsFrom(pid, ancestor int) bool {
	for range 16 {
		p, err := punix.Stat(pid)
		if err != nil || p.PPid <= 1 {
			return false
		}
		if p.PPid == ancestor {
			return true
		}
		pid = p.PPid
	}
	return false
}

// waitGone waits until none of the processes in owned lives, and records
// how long that took.
func (tt *torture) waitGone(owned map[int]string, begin time.Time, within time.Duration, what string) {
	tt.t.Helper()
	var left map[int]string
	// Every 2 ms, as the cleanup figure of the report was measured.
	if !testproc.UntilEvery(time.Until(begin.Add(within)), 2*time.Millisecond, func() bool {
		left = map[int]string{}
		for pid, c := range owned {
			if cmdline(pid) == c && c != "" && alive(pid) {
				left[pid] = c
			}
		}
		return len(left) == 0
	}) {
		tt.fatalf("%v after the owner's death (%s), survivors: %s", within, what, describe(left))
	}
	if d := time.Since(begin); len(owned) > 0 && d > tt.maxCleanup {
		tt.maxCleanup, tt.cleanupWhat = d, what
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	p, err := punix.Stat(pid)
	return err == nil && !p.Zombie()
}

// serviceGone waits for the service of p to exit after a signal: its
// trees, private directories and guardians must be gone in time.
func (tt *torture) serviceGone(p string, killed bool, begin time.Time, owned map[int]string, within time.Duration) {
	tt.t.Helper()
	svc := tt.svcs[p]
	if !killed {
		within += 10 * time.Second // a SIGTERM stops every agent, in turn
	}
	select {
	case <-svc.done:
	case <-time.After(within):
		tt.fatalf("the service of %s did not exit within %v", p, within)
	}
	tt.svcs[p] = nil
	what := map[bool]string{true: "SIGKILL service", false: "SIGTERM service"}[killed]
	tt.waitGone(owned, begin, within, what)
	if !testproc.UntilEvery(time.Until(begin.Add(within)), 2*time.Millisecond, func() bool { return len(tt.w.privateDirs(p)) == 0 }) {
		tt.fatalf("%v after the service of %s died: private dirs %v", within, p, tt.w.privateDirs(p))
	}
	if left := reapAdopted(time.Until(begin.Add(within))); len(left) > 0 {
		tt.fatalf("%v after the service of %s died: its guardians still run: %v", within, p, left)
	}
}

// killDuringStart SIGKILLs the service 0-5 ms after a start request
// reached its socket. Whether it recorded the intent is for the state
// file to say.
func (tt *torture) killDuringStart(p string, a tortureAgent) {
	delay := time.Duration(tt.rng.Int64N(int64(5*time.Millisecond) + 1))
	tt.setStep(tt.round, fmt.Sprintf("SIGKILL the service of %s %v after a start of %s", p, delay, a.id))
	tt.kills["SIGKILL service during a start"]++
	owned, within := tt.treesOwnedBy(p, "service", a)
	within = max(within, a.stop+tortureMargin)
	c, err := net.Dial("unix", tt.w.socket(p))
	if err != nil {
		tt.fatalf("dial: %v", err)
	}
	defer c.Close()
	body := fmt.Sprintf(`{"ids":[%q]}`, a.id)
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", api.PathStart, api.Host, len(body), body)
	if _, err := c.Write([]byte(req)); err != nil {
		tt.fatalf("write: %v", err)
	}
	time.Sleep(delay)
	begin := time.Now()
	_ = tt.svcs[p].cmd.Process.Kill()
	c.Close()
	tt.serviceGone(p, true, begin, owned, within)
	// Trees started after the snapshot: nothing of the identities p
	// may have started lives unless the other profile runs it.
	tt.settleDead(p, begin, within)
	enabled, _ := tt.w.intent(p, a.id)
	if !enabled && tt.want[p][a.id] {
		tt.fatalf("%s was enabled in %s before the start, and is disabled after the crash", a.id, p)
	}
	tt.want[p][a.id] = enabled
}

// killDuringStop SIGKILLs the service, or SIGTERMs or SIGKILLs the
// guardian, in the middle of the stop of a running stubborn agent.
func (tt *torture) killDuringStop(p string) {
	rows, err := tt.status(p)
	if err != nil {
		tt.fatalf("status of %s: %v", p, err)
	}
	var cands []tortureAgent
	for _, a := range tt.agents {
		if a.stubborn && rows[a.id].State == api.StateRunning {
			cands = append(cands, a)
		}
	}
	if len(cands) == 0 {
		tt.startAgent(p, tt.agents[1+tt.rng.IntN(2)])
		return
	}
	a := cands[tt.rng.IntN(len(cands))]
	row := rows[a.id]
	target := []string{"service", "guardian"}[tt.rng.IntN(2)]
	sig := unix.SIGKILL
	if target == "guardian" && tt.rng.IntN(2) == 0 {
		sig = unix.SIGTERM
	}
	delay := time.Duration(tt.rng.Int64N(int64(a.stop)))
	what := fmt.Sprintf("%v the %s %v into a stop", sig, target, delay)
	tt.setStep(tt.round, fmt.Sprintf("%s of %s in %s", what, a.id, p))
	tt.kills[fmt.Sprintf("%v %s during a stop", sig, target)]++
	owned, within := tt.treesOwnedBy(p, target, a)

	ctx, cancel := tt.ctx()
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		_, err := tt.w.client(p).Stop(ctx, a.id)
		stopped <- err
	}()
	stopping := time.Now()
	if !testproc.Until(10*time.Second, func() bool {
		rs, err := tt.status(p)
		return err == nil && rs[a.id].State == api.StateStopping
	}) {
		tt.fatalf("%s never reached stopping", a.id)
	}
	time.Sleep(time.Until(stopping.Add(delay)))
	begin := time.Now()
	pid := tt.svcs[p].cmd.Process.Pid
	if target == "guardian" {
		pid = row.GuardianPID
	}
	_ = unix.Kill(pid, sig)
	if target == "service" {
		tt.serviceGone(p, true, begin, owned, within+a.stop)
	} else {
		tt.waitGone(owned, stopping, a.stop+tortureMargin, what)
	}
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		tt.fatalf("the stop request did not end")
	}
	tt.want[p][a.id] = false
}

// settleDead checks that the dead profile p leaves nothing behind: its
// private directories are gone and every adopted process was reaped.
func (tt *torture) settleDead(p string, begin time.Time, within time.Duration) {
	tt.t.Helper()
	if !testproc.UntilEvery(time.Until(begin.Add(within+tortureMargin)), 2*time.Millisecond, func() bool {
		return len(tt.w.privateDirs(p)) == 0 && len(reapAdopted(0)) == 0
	}) {
		tt.fatalf("after the death of %s: private dirs %v, adopted processes %v", p, tt.w.privateDirs(p), reapAdopted(0))
	}
}

// settle waits until the world is at rest and consistent, then checks
// the durable intent.
func (tt *torture) settle() {
	tt.t.Helper()
	var why string
	if !testproc.UntilEvery(20*time.Second, 5*time.Millisecond, func() bool {
		why = tt.consistent()
		return why == "" || strings.HasPrefix(why, "!")
	}) {
		tt.fatalf("never settled: %s", why)
	}
	if strings.HasPrefix(why, "!") {
		tt.fatalf("%s", why[1:])
	}
	for _, p := range tortureProfiles {
		for _, a := range tt.agents {
			enabled, _ := tt.w.intent(p, a.id)
			if enabled != tt.want[p][a.id] {
				tt.fatalf("the state of %s says %s enabled=%v; the test asked for %v", p, a.id, enabled, tt.want[p][a.id])
			}
		}
	}
	if w := tt.watch.failure(); w != "" {
		tt.t.Fatal(w)
	}
}

// consistent returns why the world is not at rest or not consistent; ""
// when it is. A reason starting with "!" is a failure at once.
func (tt *torture) consistent() string {
	running := map[string][]string{} // id -> profiles running it
	rowsOf := map[string]map[string]api.Agent{}
	locks := 0
	for _, p := range tortureProfiles {
		if tt.svcs[p] == nil {
			if dirs := tt.w.privateDirs(p); len(dirs) > 0 {
				return fmt.Sprintf("private dirs of the dead %s: %v", p, dirs)
			}
			continue
		}
		rows, err := tt.status(p)
		if err != nil {
			return fmt.Sprintf("status of %s: %v", p, err)
		}
		rowsOf[p] = rows
		n := 0
		for _, a := range tt.agents {
			r := rows[a.id]
			switch r.State {
			case api.StateRunning:
				running[a.id] = append(running[a.id], p)
				n++
				if !alive(r.GuardianPID) {
					return fmt.Sprintf("%s running in %s with a dead guardian %d", a.id, p, r.GuardianPID)
				}
			case api.StateStopped, api.StateFailed, api.StateBackoff:
			default:
				return fmt.Sprintf("%s is %s in %s", a.id, r.State, p)
			}
			if r.Enabled != tt.want[p][a.id] {
				return fmt.Sprintf("!%s in %s: enabled %v in the status, the test asked for %v", a.id, p, r.Enabled, tt.want[p][a.id])
			}
		}
		if dirs := tt.w.privateDirs(p); len(dirs) != n {
			return fmt.Sprintf("%s runs %d agents and has private dirs %v", p, n, dirs)
		}
		locks += n
	}
	for _, a := range tt.agents {
		ps := running[a.id]
		if len(ps) > 1 {
			return fmt.Sprintf("!%s running in %v at once", a.id, ps)
		}
		trees := agentTrees(a.marker)
		if len(trees) != len(ps) {
			return fmt.Sprintf("%s: %d live trees, running in %v: %s", a.id, len(trees), ps, describe(procsWith(a.marker)))
		}
		if len(ps) == 1 {
			if r := rowsOf[ps[0]][a.id]; trees[0] != r.PID {
				return fmt.Sprintf("%s: tree %d, but %s says pid %d", a.id, trees[0], ps[0], r.PID)
			}
			if a.stubborn {
				if n := treeOf(a.marker); n.workers != 1 || n.escapees != 1 {
					return fmt.Sprintf("%s: not whole yet: %+v", a.id, n)
				}
			}
		} else {
			if left := procsWith(a.marker); len(left) > 0 {
				return fmt.Sprintf("%s runs nowhere, survivors: %s", a.id, describe(left))
			}
			// Backoff (contention) is at rest only while another
			// profile holds the identity.
			for p, rows := range rowsOf {
				if rows[a.id].State == api.StateBackoff {
					return fmt.Sprintf("%s in backoff in %s, and running nowhere", a.id, p)
				}
			}
		}
	}
	if held := tt.w.heldLocks(); len(held) != locks {
		return fmt.Sprintf("%d agents run, held locks: %v", locks, held)
	}
	if left := reapAdopted(0); len(left) > 0 {
		return fmt.Sprintf("adopted processes still run: %v", left)
	}
	return ""
}

// shutdown quits both services and checks that nothing is left.
func (tt *torture) shutdown() {
	for _, p := range tortureProfiles {
		svc := tt.svcs[p]
		if svc == nil {
			continue
		}
		ctx, cancel := tt.ctx()
		err := tt.w.client(p).Quit(ctx)
		cancel()
		if err != nil {
			tt.fatalf("quit %s: %v", p, err)
		}
		select {
		case <-svc.done:
		case <-time.After(20 * time.Second):
			tt.fatalf("the service of %s did not quit", p)
		}
		tt.svcs[p] = nil
	}
	for _, a := range tt.agents {
		if left := procsWith(a.marker); len(left) > 0 {
			tt.fatalf("survivors after both services quit: %s", describe(left))
		}
	}
	if held := tt.w.heldLocks(); len(held) > 0 {
		tt.fatalf("locks held after both services quit: %v", held)
	}
	for _, p := range tortureProfiles {
		if dirs := tt.w.privateDirs(p); len(dirs) > 0 {
			tt.fatalf("private dirs of %s after it quit: %v", p, dirs)
		}
	}
	var ids []string
	for _, a := range tt.agents {
		ids = append(ids, a.id+"@relay")
	}
	if cgs := agentCgroups(ids...); len(cgs) > 0 {
		tt.fatalf("agent cgroups after both services quit: %v", cgs)
	}
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		tt.fatalf("adopted processes after both services quit: %v", left)
	}
}

// agentTrees returns the live session leaders that have marker as a whole
// argument: with tortureStubborn and torturePolite, one per live tree.
func agentTrees(marker string) []int {
	procs, _ := punix.Processes()
	var out []int
	for _, p := range procs {
		if !p.Zombie() && p.Pid == p.Sid && slices.Contains(strings.Split(cmdline(p.Pid), "\x00"), marker) {
			out = append(out, p.Pid)
		}
	}
	return out
}

// watcher samples, every 2-5 ms for the whole run, the live trees (and
// escapees) of every identity: any sample with two of either is a
// failure.
type watcher struct {
	tt   *torture
	quit chan struct{}
	done chan struct{}

	mu          sync.Mutex
	maxTrees    int
	maxEscapees int
	samples     int
	fail        string
}

func startWatcher(t *testing.T, tt *torture) *watcher {
	w := &watcher{tt: tt, quit: make(chan struct{}), done: make(chan struct{})}
	markers := map[string]string{}
	for _, a := range tt.agents {
		markers[a.marker] = a.id
	}
	// Its own generator: the test's stays replayable.
	rng := rand.New(rand.NewPCG(tt.seed, 1))
	go func() {
		defer close(w.done)
		for {
			w.sample(markers)
			select {
			case <-w.quit:
				return
			case <-time.After(2*time.Millisecond + time.Duration(rng.Int64N(int64(3*time.Millisecond)))):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *watcher) sample(markers map[string]string) {
	procs, _ := punix.Processes()
	trees, escapees := map[string][]int{}, map[string][]int{}
	for _, p := range procs {
		if p.Zombie() || p.Pid != p.Sid {
			continue
		}
		args := strings.Split(cmdline(p.Pid), "\x00")
		for _, arg := range args {
			if _, ok := markers[arg]; ok {
				trees[arg] = append(trees[arg], p.Pid)
			}
			if m, ok := strings.CutSuffix(arg, "-escapee"); ok {
				if _, ok := markers[m]; ok {
					escapees[m] = append(escapees[m], p.Pid)
				}
			}
		}
	}
	// Confirm a violation with the command lines, which a process that
	// just died no longer has.
	var bad []string
	for m, pids := range trees {
		if len(pids) > 1 {
			bad = append(bad, fmt.Sprintf("%d live trees of %s: %s", len(pids), markers[m], describe(procsWith(m))))
		}
	}
	for m, pids := range escapees {
		if len(pids) > 1 {
			bad = append(bad, fmt.Sprintf("%d live escapees of %s: %s", len(pids), markers[m], describe(procsWith(m))))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	for _, pids := range trees {
		w.maxTrees = max(w.maxTrees, len(pids))
	}
	for _, pids := range escapees {
		w.maxEscapees = max(w.maxEscapees, len(pids))
	}
	if len(bad) > 0 && w.fail == "" {
		w.fail = fmt.Sprintf("I1 broken (%s): %s", w.tt.where(), strings.Join(bad, "; "))
	}
}

func (w *watcher) failure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fail
}

func (w *watcher) figures() (maxTrees, maxEscapees, samples int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxTrees, w.maxEscapees, w.samples
}

// stop ends the watcher and waits for it; it may be called twice.
func (w *watcher) stop() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	if f := w.failure(); f != "" && !w.tt.t.Failed() {
		w.tt.t.Error(f)
	}
}
