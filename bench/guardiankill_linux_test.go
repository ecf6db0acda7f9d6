package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// escapingScript (a bash script) is a polite agent with a worker in a process group of
// its own and an escapee double-forked into a session of its own, each
// named after the marker, $1.
const escapingScript = `set -m
(exec -a "$1-worker" sleep 100000) &
set +m
(setsid bash -c 'exec -a "$0-escapee" sleep 100000' "$1" &)
wait
`

// guardianDeathTarget is how long, at most, the median tree may outlive
// its guardian's SIGKILL.
const guardianDeathTarget = 20 * time.Millisecond

// BenchmarkGuardianKill measures what happens to an agent's tree when its
// guardian is SIGKILLed: the service, a child subreaper, gets the tree
// back and stops it at once, whatever the restart policy (here
// on-failure, which restarts after a backoff). Each iteration kills the
// guardian of a running escapingScript agent and times, from just before
// the kill, until its three processes (the agent, the worker, the
// escapee) have exited (zombies count), by poll(2) on their pidfds; then
// it starts the agent again through the API, untimed, without waiting
// for the backoff.
//
// Metrics: p50-ms and max-ms.
func BenchmarkGuardianKill(b *testing.B) {
	w, s, u, undoKey, marker := escapingWorld(b, "gk", "on-failure")
	var took []time.Duration
	for b.Loop() {
		b.StopTimer()
		row, procs := startEscaping(b, w, s, marker)
		b.StartTimer()
		begin := time.Now()
		if err := unix.Kill(row.GuardianPID, unix.SIGKILL); err != nil {
			b.Fatal(err)
		}
		if !waitExits(procs, begin.Add(waitLimit)) {
			b.Fatalf("the tree of %s outlived its guardian's SIGKILL by %v", marker, waitLimit)
		}
		took = append(took, time.Since(begin))
		b.StopTimer()
		for _, p := range procs {
			unix.Close(int(p.Fd))
		}
		b.StartTimer()
	}
	if err := s.quit(); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	u.drop(undoKey)
	reportDurations(b, "", took)
	checkTarget(b, "median tree life after its guardian's SIGKILL", millis(quantile(took, 0.5)), millis(guardianDeathTarget), "ms")
}

// escapingWorld starts a service whose one agent, x, is an
// escapingScript agent with the restart policy restart, its processes
// named after a marker built from name, and waits until it answers. The
// caller drops undoKey from u once it has stopped the service itself.
func escapingWorld(b *testing.B, name, restart string) (w *svcWorld, s *svc, u *undo, undoKey int, marker string) {
	b.Helper()
	exe := tetherBinary(b)
	bash := lookPath(b, "bash")
	lookPath(b, "sleep")
	lookPath(b, "setsid")
	w = newSvcWorld(b, 0)
	marker = fmt.Sprintf("bench-%s-%d", name, os.Getpid())
	script := filepath.Join(w.dir, "agent.sh")
	if err := os.WriteFile(script, []byte(escapingScript), 0o700); err != nil {
		b.Fatal(err)
	}
	cfg := fmt.Sprintf("agents:\n  - id: x\n    identity: %s\n    command: [%s, %s, %s]\n    restart: %s\n", identityOf("x"), bash, script, marker, restart)
	if err := os.WriteFile(filepath.Join(w.dir, "config", "tether", "agents.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	u = newUndo(b)
	s, err := w.startService(exe)
	if err != nil {
		b.Fatal(err)
	}
	undoKey = u.add(s.abort)
	if err := waitAnswer(w, waitLimit); err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	return w, s, u, undoKey, marker
}

// startEscaping starts agent x of an escapingWorld through the API and
// returns its row and a pidfd of each process of its tree, once whole.
func startEscaping(b *testing.B, w *svcWorld, s *svc, marker string) (api.Agent, []unix.PollFd) {
	b.Helper()
	row, err := w.startAgent("x")
	if err != nil {
		b.Fatalf("%v\nservice log:\n%s", err, s.output())
	}
	procs, err := escapingTree(marker, row.PID)
	if err != nil {
		b.Fatal(err)
	}
	return row, procs
}

// waitAnswer waits until the world's service answers.
func waitAnswer(w *svcWorld, within time.Duration) error {
	var err error
	if !testproc.Until(within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = w.client.Status(ctx)
		return err == nil
	}) {
		return fmt.Errorf("the service does not answer after %v: %v", within, err)
	}
	return nil
}

// startAgent starts agent id through the API and returns its row once it
// runs; a start during the backoff of a restart starts it at once.
func (w *svcWorld) startAgent(id string) (api.Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := w.client.Start(ctx, id)
	if err != nil {
		return api.Agent{}, err
	}
	if len(res.Results) != 1 {
		return api.Agent{}, fmt.Errorf("%d results, want 1", len(res.Results))
	}
	if err := resultIn(res.Results[0], api.StateRunning); err != nil {
		return api.Agent{}, err
	}
	return *res.Results[0].Agent, nil
}

// escapingTree waits until the tree of an escapingScript agent is whole
// (the agent, its worker and its escapee, and nothing else marked) and
// returns a pidfd of each, polled for POLLIN.
func escapingTree(marker string, agent int) ([]unix.PollFd, error) {
	var pids []int
	if !testproc.Until(waitLimit, func() bool {
		pids = marked(marker)
		var worker, escapee bool
		for _, pid := range pids {
			c := cmdline(pid)
			worker = worker || strings.HasPrefix(c, marker+"-worker\x00")
			escapee = escapee || strings.HasPrefix(c, marker+"-escapee\x00")
		}
		return len(pids) == 3 && worker && escapee && slices.Contains(pids, agent)
	}) {
		return nil, fmt.Errorf("the tree of %s (agent %d) is not whole after %v: %v", marker, agent, waitLimit, pids)
	}
	var fds []unix.PollFd
	for _, pid := range pids {
		p, err := openPid(pid)
		if err != nil {
			for _, f := range fds {
				unix.Close(int(f.Fd))
			}
			return nil, err
		}
		fds = append(fds, unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN})
	}
	return fds, nil
}

// marked returns the live processes whose command line has marker.
func marked(marker string) []int {
	procs, _ := punix.Processes()
	var out []int
	for _, p := range procs {
		if !p.Zombie() && strings.Contains(cmdline(p.Pid), marker) {
			out = append(out, p.Pid)
		}
	}
	return out
}

// waitExits waits, woken by each exit (poll(2) on the pidfds), until
// every process of fds has exited or the deadline passes, and reports
// whether they did.
func waitExits(fds []unix.PollFd, deadline time.Time) bool {
	left := slices.Clone(fds)
	for len(left) > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		if n, err := unix.Poll(left, int(wait.Milliseconds())+1); err == nil && n > 0 {
			left = slices.DeleteFunc(left, func(f unix.PollFd) bool { return f.Revents != 0 })
		}
	}
	return true
}

// cmdline is the command line of pid, each argument followed by a NUL.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}
