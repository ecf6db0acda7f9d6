package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The agent of every supervisor: a worker in its own process group
// (bash job control), a double-forked grandchild that calls setsid, and
// the agent itself, each ending as a sleep. ROLE only appears in a
// process's environ once it has exec'd its sleep (and, for the
// grandchild, once setsid(1) ran), so a tree whose three roles are seen
// is complete. With "ignore", SIGTERM is ignored and the sleeps inherit
// that. With "ready" it is the polite agent that becomes ready readyAfter
// after it starts, and says so each way a supervisor's config asks for
// (see readiness_linux_test.go): a line on its output, a file that a probe
// looks for, a newline on an inherited descriptor, sd_notify's READY=1,
// an HTTP listener (started at once, listening after the same 0.2 s).
const agentScript = `#!/bin/bash
# peer benchmark agent: $1 is polite, ignore or ready
[ "$1" = ignore ] && trap '' TERM
set -m
ROLE=worker sleep 100000 &
set +m
( ROLE=grand setsid sleep 100000 & )
if [ "$1" = ready ]; then
	[ -z "$READY_HTTP_PORT" ] || /usr/bin/python3 -c 'import sys, time, http.server as h
time.sleep(0.2)
h.HTTPServer(("127.0.0.1", int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()' "$READY_HTTP_PORT" &
	sleep 0.2
	echo ready
	[ -z "$READY_NOTIFY" ] || systemd-notify --ready
	[ -z "$READY_FILE" ] || : >"$READY_FILE"
	[ -z "$READY_FD" ] || { echo >&"$READY_FD"; eval "exec $READY_FD>&-"; }
fi
export ROLE=agent
exec sleep 100000
`

const (
	// tagEnv marks every process of an agent tree: its value names the
	// supervisor and the agent.
	tagEnv = "PEERBENCH"
	// stopTimeout is the grace between SIGTERM and SIGKILL, the same
	// for every supervisor.
	stopTimeout = 2 * time.Second
	// memAgents is how many agents the memory and idle rows run.
	memAgents = 10
	// reps is how many stops each stop row takes the median of, and
	// startReps how many starts the start rows do.
	reps      = 5
	startReps = 21
	// idleEnv sets the idle period of the wakeup row.
	idleEnv = "PEERS_IDLE"
	// onlyEnv, a comma-separated list of names, measures those
	// supervisors alone.
	onlyEnv = "PEERS_ONLY"
	// exeEnv names a tether binary to measure instead of the one built
	// from this tree (a build with a candidate fix, go build -overlay).
	exeEnv = "PEERS_TETHER"
	// waitLimit bounds every wait for a tree to appear or a supervisor
	// to answer.
	waitLimit = 10 * time.Second
	// stopLimit is how long a stop is watched before its leftovers are
	// counted and killed.
	stopLimit = stopTimeout + 3*time.Second
	// pollEvery is the period of the /proc scans.
	pollEvery = time.Millisecond
)

func TestMain(m *testing.M) {
	// PID 1 here may not reap: orphans of the trees and of killed
	// supervisors must come back to this process, which reaps them.
	testproc.Main(m, testproc.Before(func() error {
		_, err := punix.BecomeSubreaper()
		return err
	}))
}

// supervisor is one peer under measure, in its own directory.
type supervisor interface {
	name() string
	// setup writes the config for agents (name -> mode; autostart
	// marks the ones the supervisor starts by itself).
	setup(agents []agentSpec) error
	// up starts the supervisor and waits until it answers.
	up() error
	startAgents(names ...string) error
	// stopAgent asks for a stop and returns once the supervisor answers.
	stopAgent(name string) error
	// kill SIGKILLs the supervisor side that the user started.
	kill() error
	// down stops the supervisor gracefully, if it runs.
	down()
	// side returns the supervisor-side processes of the running agents
	// and how many agents they serve between them (see pssPerAgent).
	side() ([]int, error)
	pssPerAgent() (float64, error)
}

type agentSpec struct {
	name, mode string
	autostart  bool
}

// harness owns every process and directory of the run.
type harness struct {
	t   *testing.T
	dir string
	// procs times the agents' first processes and their trees' ends;
	// nil where the kernel's process events cannot be read (not root),
	// and the scans do.
	procs *procWatch
	mu    sync.Mutex       // held across starts and reaps, see reapZombies
	cmds  map[int]struct{} // children waited for by exec.Cmd
	wg    sync.WaitGroup
}

func newHarness(t *testing.T) *harness {
	dir, err := os.MkdirTemp("", "tp-")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, cmds: map[int]struct{}{}}
	if w, err := watchProcs(); err != nil {
		t.Logf("the start and stop rows fall back to /proc scans: %v", err)
	} else {
		h.procs = w
		t.Cleanup(w.close)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(agentScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// spawn starts cmd and waits for it in the background; done is closed
// once it is reaped.
func (h *harness) spawn(cmd *exec.Cmd) (done chan struct{}, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	h.cmds[pid] = struct{}{}
	done = make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_ = cmd.Wait()
		h.mu.Lock()
		delete(h.cmds, pid)
		h.mu.Unlock()
		close(done)
	}()
	return done, nil
}

// run runs a short command to its end.
func (h *harness) run(name string, args ...string) error {
	return h.runCmd(exec.Command(name, args...))
}

// runCmd runs cmd, a short command, to its end.
func (h *harness) runCmd(cmd *exec.Cmd) error {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done, err := h.spawn(cmd)
	if err != nil {
		return err
	}
	<-done
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), cmd.ProcessState, out.String())
	}
	return nil
}

// reapZombies reaps the zombie children that no exec.Cmd waits for:
// orphans adopted by this subreaper.
func (h *harness) reapZombies() {
	h.mu.Lock()
	defer h.mu.Unlock()
	procs, err := punix.Processes()
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, p := range procs {
		if p.PPid != self || !p.Zombie() {
			continue
		}
		if _, ok := h.cmds[p.Pid]; ok {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil)
	}
}

// killAll SIGKILLs every live descendant of this process until none is
// left, reaping as it goes, and waits for every exec.Cmd; it returns how
// many it had to kill.
func (h *harness) killAll() int {
	self := os.Getpid()
	killed := map[punix.Ref]bool{}
	testproc.UntilEvery(waitLimit, 5*time.Millisecond, func() bool {
		h.reapZombies()
		procs, err := punix.Processes()
		if err != nil {
			return true
		}
		live := 0
		for _, p := range punix.Descendants(procs, self) {
			if p.Zombie() {
				continue
			}
			live++
			if fd, err := unix.PidfdOpen(p.Pid, 0); err == nil {
				if q, err := punix.Stat(p.Pid); err == nil && q.Start == p.Start {
					_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
					killed[p.Ref()] = true
				}
				unix.Close(fd)
			}
		}
		return live == 0
	})
	h.wg.Wait()
	h.reapZombies()
	return len(killed)
}

// The moments of a start or a stop, after beginMono, by the kernel's
// process events (see procWatch), or scanned (when the /proc scans saw
// it) where there are none: firstExec, the first process of tag;
// wholeTree, the last of its tree's three roles to begin; lastExit, the
// last of its processes to end.
func (h *harness) firstExec(tag string, beginMono int64, scanned time.Duration) time.Duration {
	return h.byEvents("the first exec of "+tag, scanned, func(w *procWatch) (time.Duration, bool) { return w.first(tag, beginMono) })
}

func (h *harness) wholeTree(tag string, beginMono int64, scanned time.Duration) time.Duration {
	return h.byEvents("the whole tree of "+tag, scanned, func(w *procWatch) (time.Duration, bool) { return w.whole(tag, beginMono) })
}

func (h *harness) lastExit(tag string, beginMono int64, scanned time.Duration) time.Duration {
	return h.byEvents("the last exit of "+tag, scanned, func(w *procWatch) (time.Duration, bool) { return w.lastExit(tag, beginMono) })
}

func (h *harness) byEvents(what string, scanned time.Duration, of func(*procWatch) (time.Duration, bool)) time.Duration {
	if h.procs == nil {
		return scanned
	}
	d, ok := of(h.procs)
	if !ok {
		h.t.Logf("no process events for %s: the scans' %.1f ms counts", what, ms(scanned))
		return scanned
	}
	return d
}

// member is a live process of an agent tree.
type member struct {
	punix.Proc
	tag, role string
}

// scan returns the live processes below this one whose tag starts with
// prefix. Every supervisor and every tree is below this process, a child
// subreaper.
func scan(prefix string) ([]member, error) {
	procs, err := descendants(os.Getpid())
	if err != nil {
		return nil, err
	}
	var out []member
	for _, p := range procs {
		if p.Zombie() {
			continue
		}
		m := member{}
		m.tag, m.role = tagOf(p.Pid)
		if m.tag != "" && strings.HasPrefix(m.tag, prefix) {
			m.Proc = p
			out = append(out, m)
		}
	}
	return out, nil
}

// descendants walks /proc/PID/task/*/children from root once: cheaper
// than a scan of the whole process table, so the 1 ms polls take little
// CPU from the supervisors under measure. A process that is reparented
// while the walk runs can be missed by one poll, never by the next.
func descendants(root int) ([]punix.Proc, error) {
	var out []punix.Proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // the task or the process exited
			}
			for field := range strings.FieldsSeq(string(b)) {
				c, err := strconv.Atoi(field)
				if err != nil {
					return nil, fmt.Errorf("%s: %q", f, b)
				}
				if p, err := punix.Stat(c); err == nil {
					out = append(out, p)
					queue = append(queue, c)
				}
			}
		}
	}
	return out, nil
}

// complete reports whether the members of tag form a whole tree: the
// agent's sleep, the worker leading its own process group and the
// grandchild leading its own session.
func complete(ms []member, tag string) bool {
	var agent, worker, grand bool
	for _, m := range ms {
		if m.tag != tag {
			continue
		}
		switch m.role {
		case "agent":
			agent = true
		case "worker":
			worker = worker || m.Pgid == m.Pid
		case "grand":
			grand = grand || m.Sid == m.Pid
		}
	}
	return agent && worker && grand
}

// trees is how many trees of tag run at once: the most members of one role.
func trees(ms []member, tag string) int {
	n := map[string]int{}
	for _, m := range ms {
		if m.tag == tag && m.role != "" {
			n[m.role]++
		}
	}
	most := 0
	for _, c := range n {
		most = max(most, c)
	}
	return most
}

func count(ms []member, tag string) int {
	n := 0
	for _, m := range ms {
		if m.tag == tag {
			n++
		}
	}
	return n
}

// waitComplete waits until every tag's tree is complete, and returns
// when a process of the first tag was first seen, since begin.
func waitComplete(begin time.Time, tags ...string) (time.Duration, error) {
	var first time.Duration
	var ms []member
	var err error
	if !testproc.UntilEvery(waitLimit, pollEvery, func() bool {
		if ms, err = scan(""); err != nil {
			return true
		}
		if first == 0 && count(ms, tags[0]) > 0 {
			first = time.Since(begin)
		}
		return !slices.ContainsFunc(tags, func(t string) bool { return !complete(ms, t) })
	}) {
		return 0, fmt.Errorf("trees %v not complete after %v: %v", tags, waitLimit, ms)
	}
	if err != nil {
		return 0, err
	}
	return first, nil
}

// waitGone waits until no process of tag lives, up to limit, and returns
// when that was or how many were left.
func waitGone(tag string, begin time.Time, limit time.Duration) (time.Duration, int, error) {
	var at time.Duration
	var n int
	var err error
	testproc.UntilEvery(time.Until(begin.Add(limit)), pollEvery, func() bool {
		var ms []member
		if ms, err = scan(tag); err != nil {
			return true
		}
		n, at = count(ms, tag), time.Since(begin)
		return n == 0
	})
	switch {
	case err != nil:
		return 0, 0, err
	case n == 0:
		return at, 0, nil
	}
	return 0, n, nil
}

// killTag SIGKILLs whatever is left of tag's trees.
func killTag(prefix string) {
	for range 100 {
		ms, err := scan(prefix)
		if err != nil || len(ms) == 0 {
			return
		}
		for _, m := range ms {
			_ = unix.Kill(m.Pid, unix.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pssMiB is the Pss of pid from smaps_rollup.
func pssMiB(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("pid %d: no Pss in smaps_rollup", pid)
}

// switches is the number of context switches of every thread of pid.
func switches(pid int) int64 {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/status")
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// results are one supervisor's column.
type results struct {
	start       []time.Duration
	spawn       []time.Duration            // request to the agent's first process
	answered    []time.Duration            // request to the supervisor's answer
	stop        map[string][]time.Duration // by mode
	stopLeft    map[string]int             // most processes left after stopLimit, by mode
	survivors1  int
	survivors5  int
	dup         int
	pss         float64
	wakeups     float64 // per second, supervisor side
	wakeupProcs int
	errs        []string
	pssFor      string          // what the Pss row counts
	cliSpawn    []time.Duration // request to the first process, from the command line
	ready       []readyResult   // by way of readiness
}

// measure runs every row against s. A failure of one row is recorded and
// the others still run.
func measure(t *testing.T, h *harness, s supervisor, idle time.Duration) *results {
	r := &results{stop: map[string][]time.Duration{}, stopLeft: map[string]int{}}
	fail := func(what string, err error) {
		t.Logf("%s: %s: %v", s.name(), what, err)
		r.errs = append(r.errs, what)
	}
	tag := func(agent string) string { return s.name() + "-" + agent }
	cleanupTrees := func() {
		killTag(s.name() + "-")
		h.reapZombies()
	}

	// 1. Start and stop latencies, and memory and wakeups, in one
	// lifetime.
	specs := []agentSpec{{"polite", "polite", false}, {"ignore", "ignore", false}}
	var mem []string
	for i := range memAgents {
		mem = append(mem, fmt.Sprintf("m%d", i))
		specs = append(specs, agentSpec{mem[i], "polite", false})
	}
	if err := s.setup(specs); err != nil {
		fail("setup", err)
		return r
	}
	if err := s.up(); err != nil {
		fail("start of the supervisor", err)
		return r
	}
	for _, mode := range []string{"polite", "ignore"} {
		n := reps
		if mode == "polite" {
			n = startReps
		}
		for i := range n {
			begin, beginMono := time.Now(), monoNow()
			if err := s.startAgents(mode); err != nil {
				fail("start "+mode, err)
				break
			}
			answered := time.Since(begin)
			first, err := waitComplete(begin, tag(mode))
			if err != nil {
				fail("start "+mode, err)
				break
			}
			first = h.firstExec(tag(mode), beginMono, first)
			d := h.wholeTree(tag(mode), beginMono, time.Since(begin))
			if mode == "polite" {
				r.start = append(r.start, d)
				r.spawn = append(r.spawn, first)
				r.answered = append(r.answered, answered)
			}
			// A stop is timed for the first reps, and only until one
			// leaves processes behind: it will not do better on the
			// next try. The other stops just clean up.
			timed := i < reps && r.stopLeft[mode] == 0
			begin, beginMono = time.Now(), monoNow()
			errc := make(chan error, 1)
			go func() { errc <- s.stopAgent(mode) }()
			if timed {
				d, left, err := waitGone(tag(mode), begin, stopLimit)
				if err != nil {
					fail("stop "+mode, err)
				}
				if left > 0 {
					r.stopLeft[mode] = left
				} else {
					r.stop[mode] = append(r.stop[mode], h.lastExit(tag(mode), beginMono, d))
				}
			}
			if err := <-errc; err != nil {
				t.Logf("%s: stop %s answered: %v", s.name(), mode, err)
			}
			killTag(tag(mode))
			h.reapZombies()
			if err := settle(s, mode); err != nil {
				fail("start "+mode, err)
				break
			}
		}
	}
	var memTags []string
	for _, m := range mem {
		memTags = append(memTags, tag(m))
	}
	if err := s.startAgents(mem...); err != nil {
		fail("start of the memory agents", err)
	} else if _, err := waitComplete(time.Now(), memTags...); err != nil {
		fail("start of the memory agents", err)
	} else {
		// Memory and wakeups are those of agents at rest: a second
		// after their start, when each supervisor is done with it (a
		// guardian lets go of its start-up memory 100 ms after ready).
		time.Sleep(time.Second)
		r.pssFor = pssWhat[s.name()]
		if r.pss, err = s.pssPerAgent(); err != nil {
			fail("pss", err)
		}
		pids, err := s.side()
		if err != nil {
			fail("idle", err)
		} else {
			// A second more, so the window does not begin on the
			// heels of the queries above.
			time.Sleep(time.Second)
			before := make([]int64, len(pids))
			for i, p := range pids {
				before[i] = switches(p)
			}
			time.Sleep(idle)
			var sum int64
			var each []string
			for i, p := range pids {
				n := switches(p) - before[i]
				sum += n
				each = append(each, fmt.Sprintf("%s[%d]=%d", comm(p), p, n))
			}
			t.Logf("%s: context switches in %v idle: %s", s.name(), idle, strings.Join(each, " "))
			r.wakeups = float64(sum) / idle.Seconds()
			r.wakeupProcs = len(pids)
		}
	}
	s.down()
	cleanupTrees()

	// 2. Survivors of the supervisor's SIGKILL, then duplicates after
	// its restart, each in a lifetime of its own with the polite agent
	// enabled from the start.
	if err := s.setup([]agentSpec{{"dup", "polite", true}}); err != nil {
		fail("setup", err)
		return r
	}
	for _, restart := range []bool{false, true} {
		if err := s.up(); err != nil {
			fail("start of the supervisor", err)
			return r
		}
		if _, err := waitComplete(time.Now(), tag("dup")); err != nil {
			fail("autostart", err)
			s.down()
			cleanupTrees()
			return r
		}
		begin := time.Now()
		if err := s.kill(); err != nil {
			fail("kill", err)
			return r
		}
		if !restart {
			for _, at := range []time.Duration{time.Second, 5 * time.Second} {
				time.Sleep(time.Until(begin.Add(at)))
				ms, err := scan(tag("dup"))
				if err != nil {
					fail("survivors", err)
				}
				if at == time.Second {
					r.survivors1 = count(ms, tag("dup"))
				} else {
					r.survivors5 = count(ms, tag("dup"))
				}
			}
		} else {
			if err := s.up(); err != nil {
				fail("restart of the supervisor", err)
				return r
			}
			// Sample for the rest of 5 s: the most trees seen at once.
			testproc.UntilEvery(time.Until(begin.Add(5*time.Second)), pollEvery, func() bool {
				ms, err := scan(tag("dup"))
				if err != nil {
					fail("duplicates", err)
					return true
				}
				r.dup = max(r.dup, trees(ms, tag("dup")))
				return false
			})
		}
		s.down()
		cleanupTrees()
	}
	return r
}

// TestPeers runs every row against tether, supervisord, s6, PM2 and
// process-compose and prints the table.
func TestPeers(t *testing.T) {
	// A measurement, not a check: it runs with make peers.
	if os.Getenv("TETHER_PEERS") == "" {
		t.Skip("the peer comparison runs with make peers (TETHER_PEERS=1)")
	}
	var missing []string
	for _, bin := range []string{"supervisord", "supervisorctl", "s6-svscan", "s6-supervise", "s6-svc", "bash", "setsid", "sleep"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	pm2, pc, more := findPinnedPeers()
	missing = append(missing, more...)
	if len(missing) > 0 {
		msg := fmt.Sprintf("peers not installed (%s): make peers installs them (.ci/peers-deps)", strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("SKIP " + msg)
	}
	idle := 10 * time.Second
	if v := os.Getenv(idleEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration", idleEnv, v)
		}
		idle = d
	}
	h := newHarness(t)
	// Registered after the directory's removal, so it runs before it.
	var sups []supervisor
	t.Cleanup(func() {
		for _, s := range sups {
			s.down()
		}
		if n := h.killAll(); n > 0 {
			t.Logf("killed %d leftover process(es) at the end", n)
		}
		for _, s := range sups {
			if c, ok := s.(interface{ removeCgroups() }); ok {
				c.removeCgroups()
			}
		}
	})

	exe := os.Getenv(exeEnv)
	if exe == "" {
		// The binaries as shipped: static, without cgo, the
		// guardian's own beside tether.
		exe = filepath.Join(h.dir, "tether")
		for _, b := range [][2]string{{exe, "github.com/tether-dev/tether"}, {filepath.Join(h.dir, "tether-guardian"), "github.com/tether-dev/tether/guardian/cmd/tether-guardian"}} {
			build := exec.Command("go", "build", "-o", b[0], b[1])
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building %s: %v\n%s", filepath.Base(b[0]), err, out)
			}
		}
	}
	sups = []supervisor{
		newTether(h, exe),
		newSupervisord(h),
		newS6(h),
		newPM2(h, pm2),
		newProcessCompose(h, pc),
	}
	if only := os.Getenv(onlyEnv); only != "" {
		names := strings.Split(only, ",")
		sups = slices.DeleteFunc(sups, func(s supervisor) bool { return !slices.Contains(names, s.name()) })
		if len(sups) == 0 {
			t.Fatalf("%s=%q names none of tether, supervisord, s6, pm2, process-compose", onlyEnv, only)
		}
	}
	var res []*results
	for _, s := range sups {
		t.Logf("measuring %s", s.name())
		r := measure(t, h, s, idle)
		if r.dup == 0 && len(r.errs) == 0 {
			// The window closed before the restarted supervisor was up.
			r.errs = append(r.errs, "trees after the restart")
		}
		measureCLI(t, h, s, r)
		measureReady(t, h, s, r)
		res = append(res, r)
	}
	table := renderTable(sups, res, idle)
	fmt.Print("\n" + table)

	tr := res[0]
	for _, r := range res {
		if len(r.errs) > 0 {
			t.Errorf("some rows could not be measured: %v", r.errs)
		}
	}
	if tr.survivors5 != 0 {
		t.Errorf("tether: %d process(es) of the tree alive 5 s after the service's SIGKILL, want 0", tr.survivors5)
	}
	if tr.dup != 1 {
		t.Errorf("tether: %d trees at once after the service's restart, want 1", tr.dup)
	}
	if tr.pss > 1.5 {
		t.Errorf("tether: %.2f MiB Pss per agent, want <= 1.5", tr.pss)
	}
	for mode, n := range tr.stopLeft {
		t.Errorf("tether: %d process(es) of the %s tree left %v after the stop", n, mode, stopLimit)
	}
}

// pssWhat says which process the Pss row of each supervisor counts.
var pssWhat = map[string]string{
	"tether":          "median guardian",
	"supervisord":     "supervisord / agents",
	"s6":              "median s6-supervise",
	"pm2":             "God Daemon / agents",
	"process-compose": "process-compose / agents",
}

func renderTable(sups []supervisor, res []*results, idle time.Duration) string {
	var b strings.Builder
	b.WriteString("| measure |")
	for _, s := range sups {
		b.WriteString(" " + s.name() + " |")
	}
	b.WriteString("\n|---|")
	for range sups {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	row := func(what string, cell func(r *results) string) {
		b.WriteString("| " + what + " |")
		for _, r := range res {
			b.WriteString(" " + cell(r) + " |")
		}
		b.WriteString("\n")
	}
	dur := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f ms", ms(median(ds)))
	}
	row(fmt.Sprintf("start request answered (median of %d)", startReps), func(r *results) string { return dur(r.answered) })
	row(fmt.Sprintf("start latency, request to the agent's first process (median of %d)", startReps), func(r *results) string { return dur(r.spawn) })
	row(fmt.Sprintf("start latency, request to whole tree (median of %d)", startReps), func(r *results) string { return dur(r.start) })
	row(fmt.Sprintf("start latency from the command line, request to the agent's first process (median of %d)", startReps), func(r *results) string { return dur(r.cliSpawn) })
	for _, mode := range []string{"polite", "ignore"} {
		label := "stop latency, polite agent"
		if mode == "ignore" {
			label = "stop latency, SIGTERM-ignoring agent"
		}
		row(label+fmt.Sprintf(" (%v grace)", stopTimeout), func(r *results) string {
			if n := r.stopLeft[mode]; n > 0 {
				return fmt.Sprintf("never: %d of 3 left after %v", n, stopLimit)
			}
			return dur(r.stop[mode])
		})
	}
	row("tree processes alive 1 s after the supervisor's SIGKILL", func(r *results) string { return strconv.Itoa(r.survivors1) })
	row("tree processes alive 5 s after the supervisor's SIGKILL", func(r *results) string { return strconv.Itoa(r.survivors5) })
	row("trees at once in the 5 s after SIGKILL + restart", func(r *results) string {
		if r.dup == 0 {
			return "n/a (no tree seen)"
		}
		return strconv.Itoa(r.dup)
	})
	row(fmt.Sprintf("Pss per agent, supervisor side (%d agents)", memAgents), func(r *results) string {
		return fmt.Sprintf("%.2f MiB (%s)", r.pss, r.pssFor)
	})
	row(fmt.Sprintf("idle context switches/s, supervisor side (%d agents, %v)", memAgents, idle), func(r *results) string {
		return fmt.Sprintf("%.2f (%d procs)", r.wakeups, r.wakeupProcs)
	})
	row(fmt.Sprintf("readiness: start request to the agent reported ready, agent ready %v after it starts (median)", readyAfter), readyCell)
	b.WriteString("\n" + drivenBy(sups) + "\n")
	b.WriteString("\nreproduce: make peers   (or TETHER_PEERS=1 go test ./bench/peers/ -run Peers -v -count=1, with PEERS_PM2 and PEERS_PROCESS_COMPOSE)\n")
	return b.String()
}

// ---- tether ----

type tetherSup struct {
	h       *harness
	exe     string
	dir     string
	env     []string
	client  *client.Client
	cmd     *exec.Cmd
	done    chan struct{}
	lockDir string
}

const tetherProfile = "peers"

func newTether(h *harness, exe string) *tetherSup {
	dir := filepath.Join(h.dir, "tether-world")
	s := &tetherSup{h: h, exe: exe, dir: dir}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "XDG_") || name == "DISPLAY" || name == "WAYLAND_DISPLAY" {
			continue
		}
		s.env = append(s.env, kv)
	}
	s.env = append(s.env,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	s.client = client.New(filepath.Join(dir, "run", "tether", tetherProfile+".sock"))
	s.lockDir = filepath.Join(dir, "state", "tether", "locks")
	return s
}

func (s *tetherSup) name() string { return "tether" }

func (s *tetherSup) setup(agents []agentSpec) error {
	for _, d := range []string{"config/tether", "state", "run"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o700); err != nil {
			return err
		}
	}
	var cfg strings.Builder
	cfg.WriteString("agents:\n")
	for _, a := range agents {
		fmt.Fprintf(&cfg, "  - id: %s\n    command: [/bin/bash, %s, %s]\n    env: {%s: %s}\n    autostart: %v\n    restart: never\n    stop_timeout: %v\n",
			a.name, filepath.Join(s.h.dir, "agent.sh"), a.mode, tagEnv, "tether-"+a.name, a.autostart, stopTimeout)
	}
	return os.WriteFile(filepath.Join(s.dir, "config", "tether", "agents.yaml"), []byte(cfg.String()), 0o600)
}

func (s *tetherSup) up() error {
	log, err := os.OpenFile(filepath.Join(s.dir, "service.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command(s.exe, "--profile", tetherProfile, "service", "run")
	s.cmd.Env, s.cmd.Dir = s.env, s.dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if s.done, err = s.h.spawn(s.cmd); err != nil {
		return err
	}
	if !testproc.UntilEvery(waitLimit, pollEvery, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = s.client.Status(ctx)
		cancel()
		return err == nil || exited(s.done)
	}) {
		return err
	}
	if err != nil {
		return fmt.Errorf("the service exited: %v", s.cmd.ProcessState)
	}
	return nil
}

func (s *tetherSup) startAgents(names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := s.client.Start(ctx, names...)
	if err != nil {
		return err
	}
	for _, r := range res.Results {
		if r.Error != nil {
			return fmt.Errorf("%s: %w", r.ID, r.Error)
		}
	}
	return nil
}

func (s *tetherSup) stopAgent(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := s.client.Stop(ctx, name)
	if err != nil {
		return err
	}
	for _, r := range res.Results {
		if r.Error != nil {
			return fmt.Errorf("%s: %w", r.ID, r.Error)
		}
	}
	return nil
}

// kill SIGKILLs the service; its guardians are the part of tether that
// outlives it by design.
func (s *tetherSup) kill() error {
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	<-s.done
	s.cmd = nil
	return nil
}

// down asks the service to quit (every agent stops, intent stays) and
// waits for it and for the guardians it leaves to this process.
func (s *tetherSup) down() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(waitLimit):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		s.cmd = nil
	}
	// Guardians whose service was killed before exit once their
	// teardown is done.
	testproc.UntilEvery(waitLimit, 5*time.Millisecond, func() bool {
		s.h.reapZombies()
		procs, err := punix.Processes()
		return err != nil || !slices.ContainsFunc(punix.Descendants(procs, os.Getpid()), func(p punix.Proc) bool {
			return !p.Zombie() && strings.HasPrefix(comm(p.Pid), "tether")
		})
	})
}

func (s *tetherSup) rows() ([]api.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	st, err := s.client.Status(ctx)
	if err != nil {
		return nil, err
	}
	var rows []api.Agent
	for _, a := range st.Agents {
		if a.State == api.StateRunning && a.GuardianPID > 0 {
			rows = append(rows, a)
		}
	}
	return rows, nil
}

func (s *tetherSup) side() ([]int, error) {
	rows, err := s.rows()
	if err != nil {
		return nil, err
	}
	pids := []int{s.cmd.Process.Pid}
	for _, r := range rows {
		pids = append(pids, r.GuardianPID)
	}
	return pids, nil
}

// pssPerAgent is the median guardian's Pss: what one more agent costs.
// The service's own Pss is shared by every agent and logged.
func (s *tetherSup) pssPerAgent() (float64, error) {
	rows, err := s.rows()
	if err != nil {
		return 0, err
	}
	var ps []float64
	for _, r := range rows {
		p, err := pssMiB(r.GuardianPID)
		if err != nil {
			return 0, err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return 0, errors.New("no guardian runs")
	}
	slices.Sort(ps)
	svc, _ := pssMiB(s.cmd.Process.Pid)
	s.h.t.Logf("tether: guardian Pss %.2f-%.2f MiB over %d guardians, service Pss %.2f MiB", ps[0], ps[len(ps)-1], len(ps), svc)
	return ps[len(ps)/2], nil
}

// removeCgroups removes the cgroups named in owner records: a guardian
// killed at the end could not remove its own.
func (s *tetherSup) removeCgroups() {
	records, _ := filepath.Glob(filepath.Join(s.lockDir, "*.owner"))
	for _, path := range records {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		_, after, ok := strings.Cut(string(b), `"cgroup":"`)
		if !ok {
			continue
		}
		cg, _, _ := strings.Cut(after, `"`)
		if strings.HasPrefix(cg, "/sys/fs/cgroup/") {
			_ = os.Remove(cg)
		}
	}
}

func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// ---- supervisord ----

type supervisordSup struct {
	h    *harness
	dir  string
	sock string
	hc   *http.Client
	cmd  *exec.Cmd
	done chan struct{}
	n    int // agents in the config
}

func newSupervisord(h *harness) *supervisordSup {
	dir := filepath.Join(h.dir, "supervisord")
	sock := filepath.Join(dir, "sv.sock")
	return &supervisordSup{h: h, dir: dir, sock: sock, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}}
}

func (s *supervisordSup) name() string { return "supervisord" }

func (s *supervisordSup) setup(agents []agentSpec) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	var c strings.Builder
	fmt.Fprintf(&c, `[unix_http_server]
file=%[1]s/sv.sock
chmod=0700

[supervisord]
nodaemon=true
logfile=%[1]s/supervisord.log
pidfile=%[1]s/supervisord.pid
childlogdir=%[1]s

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
`, s.dir)
	for _, a := range agents {
		fmt.Fprintf(&c, `
[program:%s]
command=/bin/bash %s %s
environment=%s="supervisord-%s"
autostart=%v
autorestart=false
startsecs=%d
stopasgroup=true
killasgroup=true
stopwaitsecs=%d
stdout_logfile=%s/%s.log
redirect_stderr=true
`, a.name, filepath.Join(s.h.dir, "agent.sh"), a.mode, tagEnv, a.name, a.autostart, supervisordStartsecs(a), int(stopTimeout.Seconds()), s.dir, a.name)
	}
	s.n = len(agents)
	return os.WriteFile(filepath.Join(s.dir, "supervisord.conf"), []byte(c.String()), 0o600)
}

func (s *supervisordSup) up() error {
	log, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command("supervisord", "-n", "-c", filepath.Join(s.dir, "supervisord.conf"))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if s.done, err = s.h.spawn(s.cmd); err != nil {
		return err
	}
	if !testproc.UntilEvery(waitLimit, 5*time.Millisecond, func() bool {
		_, err = s.call("supervisor.getState")
		return err == nil || exited(s.done)
	}) {
		return err
	}
	if err != nil {
		return fmt.Errorf("supervisord exited: %v", s.cmd.ProcessState)
	}
	return nil
}

// call makes one XML-RPC call over the unix socket; args are strings,
// except booleans.
func (s *supervisordSup) call(method string, args ...any) (string, error) {
	var p strings.Builder
	for _, a := range args {
		switch v := a.(type) {
		case string:
			fmt.Fprintf(&p, "<param><value><string>%s</string></value></param>", v)
		case bool:
			b := 0
			if v {
				b = 1
			}
			fmt.Fprintf(&p, "<param><value><boolean>%d</boolean></value></param>", b)
		}
	}
	body := `<?xml version="1.0"?><methodCall><methodName>` + method + `</methodName><params>` + p.String() + `</params></methodCall>`
	resp, err := s.hc.Post("http://localhost/RPC2", "text/xml", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || strings.Contains(string(out), "<fault>") {
		return "", fmt.Errorf("%s: %s: %s", method, resp.Status, out)
	}
	return string(out), nil
}

func (s *supervisordSup) startAgents(names ...string) error {
	for _, n := range names {
		if _, err := s.call("supervisor.startProcess", n, false); err != nil {
			return err
		}
	}
	return nil
}

func (s *supervisordSup) stopAgent(name string) error {
	_, err := s.call("supervisor.stopProcess", name, true)
	return err
}

func (s *supervisordSup) kill() error {
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	<-s.done
	s.cmd = nil
	return nil
}

func (s *supervisordSup) down() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

func (s *supervisordSup) side() ([]int, error) { return []int{s.cmd.Process.Pid}, nil }

// pssPerAgent is supervisord's Pss divided by the memory agents it runs.
func (s *supervisordSup) pssPerAgent() (float64, error) {
	p, err := pssMiB(s.cmd.Process.Pid)
	s.h.t.Logf("supervisord: Pss %.2f MiB for %d agents", p, memAgents)
	return p / memAgents, err
}

// ---- s6 ----

type s6Sup struct {
	h      *harness
	dir    string
	scan   string
	cmd    *exec.Cmd
	done   chan struct{}
	agents []agentSpec
}

func newS6(h *harness) *s6Sup {
	dir := filepath.Join(h.dir, "s6")
	return &s6Sup{h: h, dir: dir, scan: filepath.Join(dir, "scan")}
}

func (s *s6Sup) name() string { return "s6" }

func (s *s6Sup) setup(agents []agentSpec) error {
	if err := os.RemoveAll(s.scan); err != nil {
		return err
	}
	for _, a := range agents {
		sd := filepath.Join(s.scan, a.name)
		if err := os.MkdirAll(sd, 0o700); err != nil {
			return err
		}
		run := fmt.Sprintf("#!/bin/sh\nexec env %s=s6-%s %s/bin/bash %s %s\n", tagEnv, a.name, s6ReadyEnv(a), filepath.Join(s.h.dir, "agent.sh"), a.mode)
		if err := os.WriteFile(filepath.Join(sd, "run"), []byte(run), 0o755); err != nil {
			return err
		}
		if err := s6Notification(sd, a); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sd, "timeout-kill"), []byte(strconv.Itoa(int(stopTimeout.Milliseconds()))+"\n"), 0o644); err != nil {
			return err
		}
		if !a.autostart {
			if err := os.WriteFile(filepath.Join(sd, "down"), nil, 0o644); err != nil {
				return err
			}
		}
	}
	s.agents = agents
	return nil
}

func (s *s6Sup) up() error {
	log, err := os.OpenFile(filepath.Join(s.dir, "svscan.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command("s6-svscan", s.scan)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if s.done, err = s.h.spawn(s.cmd); err != nil {
		return err
	}
	// Ready once every s6-supervise reads its control fifo.
	deadline := time.Now().Add(waitLimit)
	for _, a := range s.agents {
		ctl := filepath.Join(s.scan, a.name, "supervise", "control")
		if !testproc.Until(time.Until(deadline), func() bool {
			var fd int
			if fd, err = unix.Open(ctl, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
				unix.Close(fd)
			}
			return err == nil || exited(s.done)
		}) {
			return fmt.Errorf("%s: no s6-supervise after %v: %v", ctl, waitLimit, err)
		}
		if err != nil {
			return fmt.Errorf("s6-svscan exited: %v", s.cmd.ProcessState)
		}
	}
	return nil
}

// exited reports whether done is closed: the supervisor exited.
func exited(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

func (s *s6Sup) startAgents(names ...string) error {
	for _, n := range names {
		if err := s.h.run("s6-svc", "-u", filepath.Join(s.scan, n)); err != nil {
			return err
		}
	}
	return nil
}

func (s *s6Sup) stopAgent(name string) error {
	return s.h.run("s6-svc", "-d", filepath.Join(s.scan, name))
}

// supervisors returns the live s6-supervise processes below this one.
func (s *s6Sup) supervisors() ([]int, error) {
	procs, err := punix.Processes()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range punix.Descendants(procs, os.Getpid()) {
		if !p.Zombie() && comm(p.Pid) == "s6-supervise" {
			pids = append(pids, p.Pid)
		}
	}
	return pids, nil
}

// kill SIGKILLs the whole supervision tree the user started: s6-svscan
// and every s6-supervise (killing s6-svscan alone leaves each
// s6-supervise running its service, supervised as before).
func (s *s6Sup) kill() error {
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	<-s.done
	s.cmd = nil
	pids, err := s.supervisors()
	if err != nil {
		return err
	}
	for _, p := range pids {
		_ = unix.Kill(p, unix.SIGKILL)
	}
	return nil
}

// down stops s6-svscan (SIGTERM: bring every service down, stop every
// s6-supervise, exit) and kills any s6-supervise left.
func (s *s6Sup) down() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(waitLimit):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		s.cmd = nil
	}
	deadline := time.Now().Add(waitLimit)
	testproc.UntilEvery(waitLimit, 5*time.Millisecond, func() bool {
		s.h.reapZombies()
		pids, err := s.supervisors()
		if err != nil || len(pids) == 0 {
			return true
		}
		if time.Until(deadline) < waitLimit/2 {
			for _, p := range pids {
				_ = unix.Kill(p, unix.SIGKILL)
			}
		}
		return false
	})
}

// side is s6-svscan and the s6-supervise of each running memory agent.
func (s *s6Sup) side() ([]int, error) {
	pids, err := s.supervisors()
	if err != nil {
		return nil, err
	}
	return append(pids, s.cmd.Process.Pid), nil
}

// pssPerAgent is the median s6-supervise's Pss: one per agent.
func (s *s6Sup) pssPerAgent() (float64, error) {
	pids, err := s.supervisors()
	if err != nil {
		return 0, err
	}
	var ps []float64
	for _, p := range pids {
		v, err := pssMiB(p)
		if err != nil {
			return 0, err
		}
		ps = append(ps, v)
	}
	if len(ps) == 0 {
		return 0, errors.New("no s6-supervise runs")
	}
	slices.Sort(ps)
	svscan, _ := pssMiB(s.cmd.Process.Pid)
	s.h.t.Logf("s6: s6-supervise Pss %.2f-%.2f MiB over %d, s6-svscan Pss %.2f MiB", ps[0], ps[len(ps)-1], len(ps), svscan)
	return ps[len(ps)/2], nil
}
