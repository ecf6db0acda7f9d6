package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// agentsEnv sets how many agents BenchmarkService and
// BenchmarkServiceKillStubborn run besides the probe (default 200).
const agentsEnv = "TETHER_BENCH_AGENTS"

const defaultAgents = 200

// The agents of BenchmarkService. Each of the many is a tiny tree: a
// shell that puts a sleep in the background and then execs another, so
// its guardian owns two processes. The probe, started and stopped over
// and over, is the simplest shell-script agent, as in
// BenchmarkStartToReady.
const (
	treeScript  = "sleep 100000 & exec sleep 100000"
	probeScript = "exec sleep 100000"
	probeID     = "probe"
	svcProfile  = "bench"
)

// statusEvery is the period at which the startup is polled through the
// API: the resolution of up-ms. Polling much faster would take CPU from
// the service it measures on a small machine.
const statusEvery = 10 * time.Millisecond

// startGap is the pause before each start of the probe (see
// BenchmarkService).
const startGap = 100 * time.Millisecond

// upLimit bounds the wait for every agent to run.
const upLimit = 60 * time.Second

// BenchmarkService measures the service of one profile with many agents
// (200, see agentsEnv), each with its own identity, all autostarted, and
// one more agent, the probe, that is not. Once per run (per -count):
//
//   - up-ms: from just before "tether --profile bench service run" is
//     started until a status poll (every statusEvery) shows every agent
//     running; first-up-ms: until the first agent was running, by the
//     row's since;
//   - svc-rss-MiB: the service's VmRSS then; guardian-pss-MiB and
//     guardian-rss-MiB: the median guardian's Pss (smaps_rollup: shared
//     pages split between their users) and VmRSS; guardians-pss-MiB: the
//     Pss of all guardians together;
//   - usage-status-ms: the median of usageStatusRuns statuses that
//     measure what each agent costs (GET status?usage=1, as tether
//     status asks), every agent running;
//   - down-ms: from just before the service is SIGKILLed until every
//     process of every agent tree is dead (zombies count as dead), every
//     private directory is removed and every identity lock is free, each
//     seen as it happens (see killAndWatchEach); down-tree-ms, down-dirs-ms and
//     down-locks-ms: when each part alone was seen done.
//
// Each iteration, with all the agents running, starts the probe through
// the API (client.Client.Start, which answers once the agent runs) and then
// through the command line (an exec of "tether --profile bench start
// probe", measured until it has been reaped), and stops it after each
// start, untimed; each start comes startGap after the last stop, so it
// meets a warm guardian that is done starting. api-start-p50-ms, api-start-max-ms, cli-start-p50-ms
// and cli-start-max-ms are their median and maximum; ns/op is the two
// starts together. api-stop-p50-ms and api-stop-max-ms are those of the
// stops (client.Client.Stop, which answers once the tree is gone, the
// private directory removed and the lock free). api-start-cpu-ms and
// api-start-ctxsw are the median CPU time and context switches an API
// start cost the service and the probe's guardian, from just before the
// request (when the guardian waited in the pool) until the answer: what
// a start costs, whatever else runs on the machine.
//
// It also logs when the last agent became running by its row's since
// (the poll can see it later when the API is slow to answer), the CPU
// time the machine, the service, the guardians and the agent trees spent
// until every agent ran, and the service's VmRSS after the starts.
//
// Everything runs in a throwaway world (its own XDG directories under
// $TMPDIR/tb-*); every process started is reaped, and on a failure the
// service is killed and its guardians reaped (see svc.abort).
//
// Run it as go test ./bench/ -run '^$' -bench Service -benchtime=50x
// -count=3: every -count is one service lifetime, 10 to 15 s here.
func BenchmarkService(b *testing.B) {
	n := agentCount(b)
	exe := tetherBinary(b)
	lookPath(b, "sleep")
	w := newSvcWorld(b, n)
	// Registered after the world, so it runs first: no process outlives
	// the benchmark, whatever stopped it.
	u := newUndo(b)

	// 1. Startup.
	mark, err := markCPU()
	if err != nil {
		b.Fatal(err)
	}
	s, up, undoKey := w.startRunning(b, exe, u)
	first := slices.MinFunc(up.rows, func(x, y api.Agent) int { return x.Since.Compare(y.Since) })
	last := slices.MaxFunc(up.rows, func(x, y api.Agent) int { return x.Since.Compare(y.Since) })
	b.Logf("%d agents running %.0f ms after the service started (seen by polling; the last row's since says %.0f ms, the first's %.0f ms)",
		n, millis(up.seen), millis(last.Since.Sub(s.begin)), millis(first.Since.Sub(s.begin)))
	if cpu, err := startupCPU(mark, s.cmd.Process.Pid, up.rows); err == nil {
		b.Logf("CPU used until then: %.2f s of the %.2f s the machine's %d cores had: the service %.2f s, its %d guardians %.2f s (%.1f ms each), their trees %.2f s (%.1f ms each), this benchmark %.2f s",
			cpu.machine, up.seen.Seconds()*float64(runtime.NumCPU()), runtime.NumCPU(), cpu.service,
			n, cpu.guardians, 1000*cpu.guardians/float64(n), cpu.agents, 1000*cpu.agents/float64(n), cpu.bench)
	}

	// 2. Memory, with every agent running.
	if _, err := waitTrees(up.rows, waitLimit); err != nil {
		b.Fatal(err)
	}
	mem, err := measureMemory(s.cmd.Process.Pid, up.rows)
	if err != nil {
		b.Fatal(err)
	}
	usageStatus, err := w.timeUsageStatus()
	if err != nil {
		b.Fatal(err)
	}

	// 4 and 5. Starts of the probe, with every agent running.
	var viaAPI, viaCLI, stops, apiCPU []time.Duration
	var apiSwitches []int64
	stop := func() {
		b.StopTimer()
		d, err := w.stopProbe()
		if err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		stops = append(stops, d)
		b.StartTimer()
	}
	for b.Loop() {
		b.StopTimer()
		// Each start meets a warm guardian that is done starting: the
		// pool refills 25 ms after a start, and an exec of the guardian
		// and its start-up take a few ms more on a loaded machine.
		time.Sleep(startGap)
		mark, err := markCosts(s.cmd.Process.Pid, exe)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		d, row, err := w.startProbeAPI()
		if err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		viaAPI = append(viaAPI, d)
		b.StopTimer()
		c, err := mark.since(s.cmd.Process.Pid, row.GuardianPID)
		if err != nil {
			b.Fatal(err)
		}
		apiCPU, apiSwitches = append(apiCPU, c.cpu), append(apiSwitches, c.switches)
		b.StartTimer()
		stop()
		b.StopTimer()
		time.Sleep(startGap)
		b.StartTimer()
		if d, err = w.startProbeCLI(exe); err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		viaCLI = append(viaCLI, d)
		stop()
	}

	// 3. The service's SIGKILL. The probe is stopped: the trees are
	// those of the many agents.
	trees, err := waitTrees(up.rows, waitLimit)
	if err != nil {
		b.Fatal(err)
	}
	rssEnd, _ := rssMiB(s.cmd.Process.Pid)
	down, err := s.killAndWatch(trees, waitLimit)
	if err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	if err := s.finish(trees); err != nil {
		b.Fatal(err)
	}
	u.drop(undoKey)

	b.ReportMetric(millis(up.seen), "up-ms")
	b.ReportMetric(millis(first.Since.Sub(s.begin)), "first-up-ms")
	b.ReportMetric(mem.serviceRSS, "svc-rss-MiB")
	b.ReportMetric(quantile(mem.guardianPss, 0.5), "guardian-pss-MiB")
	b.ReportMetric(quantile(mem.guardianRSS, 0.5), "guardian-rss-MiB")
	b.ReportMetric(sum(mem.guardianPss), "guardians-pss-MiB")
	b.ReportMetric(millis(down.all), "down-ms")
	b.ReportMetric(millis(down.tree), "down-tree-ms")
	b.ReportMetric(millis(down.dirs), "down-dirs-ms")
	b.ReportMetric(millis(down.locks), "down-locks-ms")
	b.ReportMetric(millis(usageStatus), "usage-status-ms")
	reportDurations(b, "api-start-", viaAPI)
	reportDurations(b, "cli-start-", viaCLI)
	reportDurations(b, "api-stop-", stops)
	if len(apiCPU) > 0 {
		b.ReportMetric(millis(quantile(apiCPU, 0.5)), "api-start-cpu-ms")
		b.ReportMetric(float64(quantile(apiSwitches, 0.5)), "api-start-ctxsw")
	}
	b.Logf("service VmRSS %.1f MiB with %d agents running, %.1f MiB after %d probe starts", mem.serviceRSS, n, rssEnd, 2*len(viaAPI))

	checkTarget(b, "time until every agent runs", millis(up.seen), 3000, "ms")
	checkTarget(b, "service RSS", mem.serviceRSS, 40, "MiB")
	checkTarget(b, "cleanup after the service's SIGKILL", millis(down.all), 1000, "ms")
	if len(viaAPI) > 0 {
		checkTarget(b, "median API start", millis(quantile(viaAPI, 0.5)), 10, "ms")
		checkTarget(b, "median command-line start", millis(quantile(viaCLI, 0.5)), 15, "ms")
	}
}

// usageStatusRuns is how many statuses with usage timeUsageStatus times.
const usageStatusRuns = 5

// timeUsageStatus times statuses that measure what each agent costs
// (GET status?usage=1), with every agent running, and returns the
// median. Each must show every tree whole: two processes.
func (w *svcWorld) timeUsageStatus() (time.Duration, error) {
	var ds []time.Duration
	for range usageStatusRuns {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		begin := time.Now()
		st, err := w.client.StatusWithUsage(ctx)
		d := time.Since(begin)
		cancel()
		if err != nil {
			return 0, err
		}
		for _, a := range st.Agents {
			if a.ID != probeID && (a.Usage == nil || a.Usage.Procs != 2) {
				return 0, fmt.Errorf("agent %s: usage %+v, want its two processes", a.ID, a.Usage)
			}
		}
		ds = append(ds, d)
	}
	return quantile(ds, 0.5), nil
}

// agentCount is the number of agents agentsEnv asks for.
func agentCount(b *testing.B) int {
	n := defaultAgents
	if v := os.Getenv(agentsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number of agents", agentsEnv, v)
		}
	}
	return n
}

// startRunning starts the world's service, with its abort registered in
// u, and waits until every agent runs.
func (w *svcWorld) startRunning(b *testing.B, exe string, u *undo) (*svc, upResult, int) {
	b.Helper()
	s, err := w.startService(exe)
	if err != nil {
		b.Fatal(err)
	}
	key := u.add(s.abort)
	up, err := s.waitRunning(upLimit)
	if err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	return s, up, key
}

// svcWorld is a throwaway user environment for one service: its own XDG
// directories, so nothing touches the real user's config, state, locks or
// sockets, and a config of n tree agents and the probe.
type svcWorld struct {
	dir    string
	env    []string
	n      int
	ids    []string
	paths  svcPaths
	client *client.Client
}

// svcPaths are where the service of the world keeps its files, as
// service.ResolvePaths derives them from the XDG directories.
type svcPaths struct {
	socket, privateRoot, lockDir string
}

func newSvcWorld(b *testing.B, n int) *svcWorld {
	b.Helper()
	return newSvcWorldOf(b, n, treeAgent{script: treeScript})
}

// treeAgent is how each of the many agents of a svcWorld runs: its
// shell script, and its stop_timeout (zero: the default).
type treeAgent struct {
	script      string
	stopTimeout time.Duration
}

// newSvcWorldOf is newSvcWorld with n agents that run as many says.
func newSvcWorldOf(b *testing.B, n int, many treeAgent) *svcWorld {
	b.Helper()
	// Short: the runtime directory holds the unix socket (about 100
	// bytes at most).
	dir, err := os.MkdirTemp("", "tb-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	w := &svcWorld{dir: dir, n: n}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "XDG_"), name == "DISPLAY", name == "WAYLAND_DISPLAY":
		case name == "GODEBUG":
			// Our init's execwait=2 is for this process's own children,
			// not for the service under measure.
			if v := withoutSetting(kv[len("GODEBUG="):], "execwait=2"); v != "" {
				w.env = append(w.env, "GODEBUG="+v)
			}
		default:
			w.env = append(w.env, kv)
		}
	}
	for _, d := range []string{"config/tether", "state", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	w.env = append(w.env,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	w.paths = svcPaths{
		socket:      filepath.Join(dir, "run", "tether", svcProfile+".sock"),
		privateRoot: filepath.Join(dir, "state", "tether", svcProfile, "private"),
		lockDir:     filepath.Join(dir, "state", "tether", "locks"),
	}
	if len(w.paths.socket) > 100 {
		b.Fatalf("socket path %s is too long for a unix socket: set TMPDIR to a shorter directory", w.paths.socket)
	}
	w.client = client.New(w.paths.socket)

	var cfg strings.Builder
	cfg.WriteString("agents:\n")
	agent := func(id, script string, autostart bool, stopTimeout time.Duration) {
		fmt.Fprintf(&cfg, "  - id: %s\n    identity: %s\n    command: [/bin/sh, -c, %q]\n    autostart: %v\n",
			id, identityOf(id), script, autostart)
		if stopTimeout > 0 {
			fmt.Fprintf(&cfg, "    stop_timeout: %v\n", stopTimeout)
		}
	}
	for i := range n {
		id := fmt.Sprintf("a%03d", i)
		w.ids = append(w.ids, id)
		agent(id, many.script, true, many.stopTimeout)
	}
	agent(probeID, probeScript, false, 0)
	if err := os.WriteFile(filepath.Join(dir, "config", "tether", "agents.yaml"), []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return w
}

// identityOf is the identity of agent id in a svcWorld's config.
func identityOf(id string) string { return "bench-" + id + "@local" }

// withoutSetting removes one setting from a comma-separated GODEBUG value.
func withoutSetting(v, setting string) string {
	var keep []string
	for s := range strings.SplitSeq(v, ",") {
		if s != setting && s != "" {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, ",")
}

// svc is one "tether service run" of a world.
type svc struct {
	w       *svcWorld
	cmd     *exec.Cmd
	log     *os.File
	begin   time.Time     // just before the service was started
	done    chan struct{} // closed once the service has been reaped
	waitErr error
}

// startService starts the world's service, its output in a log file.
func (w *svcWorld) startService(exe string) (*svc, error) {
	log, err := os.Create(filepath.Join(w.dir, "service.log"))
	if err != nil {
		return nil, err
	}
	s := &svc{w: w, log: log, done: make(chan struct{})}
	s.cmd = exec.Command(exe, "--profile", svcProfile, "service", "run")
	s.cmd.Env = w.env
	s.cmd.Dir = w.dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.begin = time.Now()
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting the service: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// output returns the service's log, for failure messages.
func (s *svc) output() string { return tail(s.log.Name()) }

// upResult is what waitRunning saw.
type upResult struct {
	seen time.Duration // from the service's start until the poll that saw all running
	rows []api.Agent   // the rows of the many agents, in config order
}

// waitRunning polls the status every statusEvery until every agent but
// the probe runs. An agent that fails, or a service that exits, ends the
// wait with an error.
func (s *svc) waitRunning(within time.Duration) (upResult, error) {
	deadline := s.begin.Add(within)
	var up upResult
	var last api.Status
	var lastErr, ended error
	if testproc.UntilEvery(time.Until(deadline), statusEvery, func() bool {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		st, err := s.w.client.Status(ctx)
		at := time.Since(s.begin)
		cancel()
		if err == nil {
			last, lastErr = st, nil
			var rows []api.Agent
			for _, a := range st.Agents {
				switch {
				case a.ID == probeID:
				case a.State == api.StateRunning:
					rows = append(rows, a)
				case a.State == api.StateFailed || a.State == api.StateBackoff || a.State == api.StateCleanupFailed:
					ended = fmt.Errorf("agent %s is %s: %v", a.ID, a.State, a.Error)
					return true
				}
			}
			if len(rows) == s.w.n {
				up = upResult{seen: at, rows: rows}
				return true
			}
		} else {
			lastErr = err
		}
		select {
		case <-s.done:
			ended = fmt.Errorf("the service exited while its agents were starting: %v", s.waitErr)
			return true
		default:
		}
		return false
	}) {
		return up, ended
	}
	running := 0
	for _, a := range last.Agents {
		if a.State == api.StateRunning {
			running++
		}
	}
	return upResult{}, fmt.Errorf("%d of %d agents running %v after the service started (last status error: %v)", running, s.w.n, within, lastErr)
}

// tree is one agent's guardian and the processes of its tree.
type tree struct {
	id       string
	guardian punix.Proc
	members  []punix.Proc
}

// waitTrees waits until the tree of every row is complete: the guardian
// has exactly two descendants, both live and past their exec of sleep.
func waitTrees(rows []api.Agent, within time.Duration) ([]tree, error) {
	var trees []tree
	var incomplete string
	var err error
	if !testproc.Until(within, func() bool {
		var procs []punix.Proc
		if procs, err = punix.Processes(); err != nil {
			return true
		}
		byPid := make(map[int]punix.Proc, len(procs))
		for _, p := range procs {
			byPid[p.Pid] = p
		}
		trees, incomplete = nil, ""
		for _, r := range rows {
			g, ok := byPid[r.GuardianPID]
			if !ok || g.Zombie() {
				err = fmt.Errorf("agent %s: guardian pid %d is gone", r.ID, r.GuardianPID)
				return true
			}
			ms := punix.Descendants(procs, r.GuardianPID)
			complete := len(ms) == 2 && slices.ContainsFunc(ms, func(p punix.Proc) bool { return p.Pid == r.PID })
			for _, m := range ms {
				complete = complete && !m.Zombie() && comm(m.Pid) == "sleep"
			}
			if !complete {
				incomplete = fmt.Sprintf("agent %s (guardian %d, agent %d): %v", r.ID, r.GuardianPID, r.PID, ms)
				return false
			}
			trees = append(trees, tree{id: r.ID, guardian: g, members: ms})
		}
		return true
	}) {
		return nil, fmt.Errorf("a tree is incomplete after %v: %s", within, incomplete)
	}
	if err != nil {
		return nil, err
	}
	return trees, nil
}

// memory is what the service and its guardians cost.
type memory struct {
	serviceRSS               float64 // MiB
	guardianPss, guardianRSS []float64
}

func measureMemory(servicePID int, rows []api.Agent) (memory, error) {
	var m memory
	var err error
	if m.serviceRSS, err = rssMiB(servicePID); err != nil {
		return m, fmt.Errorf("service: %w", err)
	}
	for _, r := range rows {
		pss, err := kBFieldMiB("/proc/"+strconv.Itoa(r.GuardianPID)+"/smaps_rollup", "Pss")
		if err != nil {
			return m, fmt.Errorf("guardian of %s: %w", r.ID, err)
		}
		rss, err := rssMiB(r.GuardianPID)
		if err != nil {
			return m, fmt.Errorf("guardian of %s: %w", r.ID, err)
		}
		m.guardianPss = append(m.guardianPss, pss)
		m.guardianRSS = append(m.guardianRSS, rss)
	}
	return m, nil
}

// kBFieldMiB reads a "Name: N kB" line of a /proc file, in MiB.
func kBFieldMiB(path, name string) (float64, error) {
	v, err := statusField(path, name)
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %s %q: %v", path, name, v, err)
	}
	return kb / 1024, nil
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// startProbeAPI starts the probe through the API and returns how long
// the call took; the call returns once the agent runs.
func (w *svcWorld) startProbeAPI() (time.Duration, api.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	begin := time.Now()
	res, err := w.client.Start(ctx, probeID)
	d := time.Since(begin)
	if err != nil {
		return d, api.Agent{}, fmt.Errorf("API start of %s: %w", probeID, err)
	}
	if err := wantState(res, api.StateRunning); err != nil {
		return d, api.Agent{}, err
	}
	return d, *res.Results[0].Agent, nil
}

// cost is what processes spent: CPU time on every thread, and context
// switches (voluntary and involuntary). Neither grows much when other
// work shares the machine, as wall-clock latencies do.
type cost struct {
	cpu      time.Duration
	switches int64
}

// costOf returns the cost pid has run up since it started.
func costOf(pid int) (cost, error) {
	cpu, err := cpuTime(pid)
	if err != nil {
		return cost{}, err
	}
	sw, err := contextSwitches(pid)
	return cost{cpu, sw}, err
}

// costMark holds the cost of the service and of each guardian it runs.
type costMark map[int]cost

// markCosts takes the cost of service and of every tether process it runs
// (the warm guardians among them).
func markCosts(service int, exe string) (costMark, error) {
	procs, err := tetherProcs(service, exe, nil)
	if err != nil {
		return nil, err
	}
	m := costMark{}
	for _, p := range procs {
		if c, err := costOf(p.pid); err == nil {
			m[p.pid] = c
		}
	}
	return m, nil
}

// since returns what pids spent since m was taken; a pid m does not hold
// (a guardian spawned since) counts from its start.
func (m costMark) since(pids ...int) (cost, error) {
	var sum cost
	for _, pid := range pids {
		c, err := costOf(pid)
		if err != nil {
			return cost{}, fmt.Errorf("pid %d: %w", pid, err)
		}
		sum.cpu += c.cpu - m[pid].cpu
		sum.switches += c.switches - m[pid].switches
	}
	return sum, nil
}

// startProbeCLI starts the probe with "tether start" and returns how long
// it took from just before the exec until the command was reaped.
func (w *svcWorld) startProbeCLI(exe string) (time.Duration, error) {
	cmd := exec.Command(exe, "--profile", svcProfile, "start", probeID)
	cmd.Env = w.env
	cmd.Dir = w.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	begin := time.Now()
	err := cmd.Run()
	d := time.Since(begin)
	if err != nil {
		return d, fmt.Errorf("tether start %s: %v: %s%s", probeID, err, stdout.Bytes(), stderr.Bytes())
	}
	if want := probeID + ": " + string(api.StateRunning) + " (pid "; !strings.HasPrefix(stdout.String(), want) {
		return d, fmt.Errorf("tether start %s printed %q, want %q...", probeID, stdout.Bytes(), want)
	}
	return d, nil
}

// stopProbe stops the probe through the API and returns how long the call
// took; it returns once the tree is gone, the private directory removed
// and the lock free.
func (w *svcWorld) stopProbe() (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	begin := time.Now()
	res, err := w.client.Stop(ctx, probeID)
	d := time.Since(begin)
	if err != nil {
		return d, fmt.Errorf("API stop of %s: %w", probeID, err)
	}
	return d, wantState(res, api.StateStopped)
}

// wantState checks the one result of an action on the probe.
func wantState(res api.Results, state api.State) error {
	if len(res.Results) != 1 {
		return fmt.Errorf("%d results, want 1: %+v", len(res.Results), res)
	}
	return resultIn(res.Results[0], state)
}

// resultIn checks that one result of an action is no error and leaves its
// agent in state.
func resultIn(r api.Result, state api.State) error {
	switch {
	case r.Error != nil:
		return fmt.Errorf("%s: %w", r.ID, r.Error)
	case r.Agent == nil || r.Agent.State != state:
		return fmt.Errorf("%s: answered with %+v, want state %s", r.ID, r.Agent, state)
	}
	return nil
}

// downTimes says when, after the service's SIGKILL, each part of the
// cleanup was seen done.
type downTimes struct {
	tree, dirs, locks, all time.Duration
}

// killAndWatch SIGKILLs the service and watches until every
// tree is dead, the private root is empty and every identity lock is
// free. Before the kill it checks that each of these is held or present.
func (s *svc) killAndWatch(trees []tree, within time.Duration) (downTimes, error) {
	t, err := s.killAndWatchEach(trees, within)
	return downTimes{tree: t.treeLast, dirs: t.dirs, locks: t.locks, all: t.all}, err
}

// finish reaps the killed service and the guardians it left to this
// process, which exit once their teardown is done, and checks that
// nothing of the world is left.
func (s *svc) finish(trees []tree) error {
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		return fmt.Errorf("the killed service was not reaped within %v", waitLimit)
	}
	s.log.Close()
	var errs []error
	for _, tr := range trees {
		g, err := openProc(tr.guardian.Ref())
		if err != nil {
			continue // already reaped: gone for good
		}
		if err := g.reapWithin(waitLimit); err != nil {
			errs = append(errs, fmt.Errorf("guardian of %s: %w", tr.id, err))
		}
		g.close()
	}
	if left := reapOrphans(waitLimit); len(left) > 0 {
		errs = append(errs, fmt.Errorf("%d process(es) outlived the cleanup and were killed: %v", len(left), left))
	}
	return errors.Join(errs...)
}

// abort is the undo of a service lifetime that did not finish: it kills
// the service, gives its guardians their teardown, kills whatever is left,
// reaps everything and removes the cgroups of guardians that had to be
// killed.
func (s *svc) abort() {
	_ = s.cmd.Process.Kill()
	<-s.done
	s.log.Close()
	reapOrphans(waitLimit)
	removeRecordedCgroups(s.w.paths.lockDir)
}

// reapOrphans waits until this process has no descendant left, reaping
// the children that exit: guardians adopted after their service died, or
// agents adopted after their guardian died (this process is a child
// subreaper, and PID 1 here may not reap). Whatever still lives after
// grace is SIGKILLed; those are returned. It must only run when this
// process has no exec.Cmd of its own running.
func reapOrphans(grace time.Duration) []punix.Proc {
	self := os.Getpid()
	deadline := time.Now().Add(grace)
	seen := make(map[punix.Ref]bool)
	var killed []punix.Proc
	testproc.Until(grace+waitLimit, func() bool {
		procs, err := punix.Processes()
		if err != nil {
			return true
		}
		live := 0
		for _, p := range punix.Descendants(procs, self) {
			if p.Zombie() {
				if p.PPid == self {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
				}
				continue
			}
			live++
			if time.Now().Before(deadline) {
				continue
			}
			if !seen[p.Ref()] {
				seen[p.Ref()] = true
				killed = append(killed, p)
			}
			if h, err := openProc(p.Ref()); err == nil {
				h.kill()
				h.close()
			}
		}
		return live == 0
	})
	return killed
}

// removeRecordedCgroups removes the cgroups named in the owner records of
// lockDir: a guardian that was killed could not remove its own. A cgroup
// that still has processes, or is gone, stays as it is.
func removeRecordedCgroups(lockDir string) {
	records, _ := filepath.Glob(filepath.Join(lockDir, "*.owner"))
	for _, path := range records {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r struct {
			Cgroup string `json:"cgroup"`
		}
		if json.Unmarshal(b, &r) == nil && r.Cgroup != "" && strings.HasPrefix(r.Cgroup, "/sys/fs/cgroup/") {
			_ = os.Remove(r.Cgroup)
		}
	}
}

// cpuUse is the CPU time, in seconds, that a startup took.
type cpuUse struct {
	machine, service, guardians, agents, bench float64
}

// cpuMark is where the CPU counters stood when a startup began.
type cpuMark struct {
	machine uint64        // clock ticks, see busyTicks
	bench   time.Duration // this process, see cpuTime
}

func markCPU() (cpuMark, error) {
	m, err := busyTicks()
	if err != nil {
		return cpuMark{}, err
	}
	self, err := cpuTime(os.Getpid())
	return cpuMark{m, self}, err
}

// startupCPU returns the CPU time the machine and this process spent
// since m, and what the service, the guardians of rows and the processes
// of their trees have used (all of them started after m).
func startupCPU(m cpuMark, servicePID int, rows []api.Agent) (cpuUse, error) {
	var u cpuUse
	busy, err := busyTicks()
	if err != nil {
		return u, err
	}
	u.machine = float64(busy-m.machine) / clockTicks
	self, err := cpuTime(os.Getpid())
	if err != nil {
		return u, err
	}
	u.bench = (self - m.bench).Seconds()
	t, err := cpuTime(servicePID)
	if err != nil {
		return u, err
	}
	u.service = t.Seconds()
	procs, err := punix.Processes()
	if err != nil {
		return u, err
	}
	for _, r := range rows {
		t, err := cpuTime(r.GuardianPID)
		if err != nil {
			return u, err
		}
		u.guardians += t.Seconds()
		for _, p := range punix.Descendants(procs, r.GuardianPID) {
			if t, err := cpuTime(p.Pid); err == nil {
				u.agents += t.Seconds()
			}
		}
	}
	return u, nil
}

// cpuTime returns the time every thread of pid has spent on a CPU, from
// /proc/PID/task/*/schedstat: nanoseconds, where /proc/PID/stat counts
// whole clock ticks and rounds a short-lived process down to nothing.
func cpuTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("pid %d: %w", pid, punix.ErrNoProcess)
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// clockTicks is USER_HZ, the unit of the times in /proc: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// busyTicks returns the CPU time all cores have spent busy since boot
// (/proc/stat: user, nice, system, irq, softirq, steal), in clock ticks.
func busyTicks() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var sum uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %v", line, err)
		}
		sum += n
	}
	return sum, nil
}
