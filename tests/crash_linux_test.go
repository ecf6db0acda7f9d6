package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// ownerGoneMargin is what the crash tests allow beyond an agent's stop
// timeout for its tree, private directory and lock to be gone after the
// service's SIGKILL. I2 promises 100 ms; the tests allow more, because
// they run on shared, loaded machines, and log what they measured.
const ownerGoneMargin = time.Second

// misbehavingAgent is an agent that makes a stop as hard as it can. It
// ignores SIGTERM, and so does everything it starts (an ignored signal
// stays ignored across fork and exec); it has a worker in a process group
// of its own and an escapee that forked twice into a session of its own.
// Every process carries the marker, $1, on its command line.
const misbehavingAgent = `#!/bin/bash
trap '' TERM
# Job control puts the worker in a process group of its own.
set -m
(exec -a "$1-worker" sleep 1000) &
set +m
# The escapee's parent exits at once: it is orphaned, in its own session.
(setsid bash -c 'exec -a "$0-escapee" sleep 1000' "$1" &)
echo "agent $1 up"
wait
`

// crashWorld is a world with the misbehaving agent's script in it; it
// returns the path of bash and of the script.
func crashWorld(t *testing.T) (w *world, bash, script string) {
	t.Helper()
	needTools(t, "bash", "setsid", "sleep")
	bash, _ = exec.LookPath("bash")
	w = newWorld(t)
	script = filepath.Join(w.dir, "agent.sh")
	if err := os.WriteFile(script, []byte(misbehavingAgent), 0o700); err != nil {
		t.Fatal(err)
	}
	return w, bash, script
}

func misbehavingYAML(id, bash, script, marker string, autostart bool, stopTimeout time.Duration) string {
	return fmt.Sprintf(`  - id: %s
    identity: %s@relay
    command: [%s, %s, %s]
    autostart: %v
    restart: never
    stop_timeout: %v
`, id, id, bash, script, marker, autostart, stopTimeout)
}

// politeYAML is an agent that stops at the first SIGTERM; its child
// carries the marker too.
func politeYAML(id, bash, marker string, autostart bool) string {
	return fmt.Sprintf(`  - id: %s
    identity: %s@relay
    command: [%s, -c, 'echo started; (exec -a "$0-child" sleep 1000) & wait', %s]
    autostart: %v
    restart: never
    stop_timeout: 1s
`, id, id, bash, marker, autostart)
}

// tree counts the processes of the misbehaving agent's trees marked
// with marker, by role.
type tree struct{ agents, workers, escapees, all int }

func treeOf(marker string) tree {
	var n tree
	for _, c := range procsWith(marker) {
		n.all++
		switch {
		case strings.HasPrefix(c, marker+"-worker\x00"):
			n.workers++
		case strings.HasPrefix(c, marker+"-escapee\x00"):
			n.escapees++
		case strings.Contains(c, "\x00"+marker+"\x00"):
			n.agents++
		}
	}
	return n
}

// waitTrees waits until exactly n whole trees marked with marker live.
// Forks of the agent's shell briefly carry its command line too, so only
// a count where every role matches counts.
func waitTrees(t *testing.T, marker string, n int) {
	t.Helper()
	want := tree{n, n, n, 3 * n}
	var got tree
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		got = treeOf(marker)
		return got == want
	}) {
		t.Fatalf("trees of %s: %+v, want %+v: %s", marker, got, want, describe(procsWith(marker)))
	}
}

// treesOf returns the live session leaders that have marker as a whole
// argument: one per live agent tree started with it (an escapee's marker
// has a suffix, and a worker leads no session).
func treesOf(marker string) []int {
	procs, _ := punix.Processes()
	var out []int
	for _, p := range procs {
		if !p.Zombie() && p.Pid == p.Sid && strings.Contains(cmdline(p.Pid), "\x00"+marker+"\x00") {
			out = append(out, p.Pid)
		}
	}
	return out
}

// exactlyOnce waits until each marker has its number of live agent trees
// and checks, for a while longer, that it keeps it: a relaunch must not
// start an agent twice, nor a second time a moment later.
func exactlyOnce(t *testing.T, within time.Duration, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for marker, n := range want {
		if !testproc.UntilEvery(time.Until(deadline), 2*time.Millisecond, func() bool { return len(treesOf(marker)) == n }) {
			t.Fatalf("%d live trees of %s, want %d: %s", len(treesOf(marker)), marker, n, describe(procsWith(marker)))
		}
	}
	var wrong string
	var got []int
	if testproc.UntilEvery(within, 5*time.Millisecond, func() bool {
		for marker, n := range want {
			if got = treesOf(marker); len(got) != n {
				wrong = marker
				return true
			}
		}
		return false
	}) {
		t.Fatalf("%d live trees of %s, want exactly %d: %s", len(got), wrong, want[wrong], describe(procsWith(wrong)))
	}
}

// adoptedNow counts the processes this test adopted that still run or
// wait to be reaped: guardians of a service that was just killed.
func adoptedNow() int {
	sid, _ := unix.Getsid(0)
	procs, _ := punix.Processes()
	n := 0
	for _, p := range procs {
		if p.PPid == os.Getpid() && p.Sid != sid {
			n++
		}
	}
	return n
}

// The service is SIGKILLed at steady state while it runs an agent that
// ignores SIGTERM, with a worker in its own process group and a
// double-forked escapee in its own session. Everything goes within the
// stop timeout (I2), and a relaunch brings back what was enabled, once:
// durable intent decides, not autostart.
func TestOwnerKilledAtSteadyState(t *testing.T) {
	w, bash, script := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const stop = time.Second
	w.writeConfig("agents:\n" +
		misbehavingYAML("x", bash, script, m+"-x", true, stop) +
		politeYAML("y", bash, m+"-y", false) + // enabled by a start
		politeYAML("z", bash, m+"-z", true)) // disabled by a stop
	svc := w.startService("default")
	w.mustRun("start", "y")
	w.mustRun("stop", "z")
	waitTrees(t, m+"-x", 1)
	exactlyOnce(t, 0, map[string]int{m + "-y": 1, m + "-z": 0})

	begin := time.Now()
	svc.kill()
	took := w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
	t.Logf("trees, private dirs and locks gone %v after the service's SIGKILL (stop timeout %v)", took, stop)
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running after their teardown: %v", left)
	}
	// Nothing came back before the guardians exited.
	w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)

	w.startService("default")
	w.waitState("default", "x", api.StateRunning)
	w.waitState("default", "y", api.StateRunning)
	waitTrees(t, m+"-x", 1)
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 0})
	if st := w.status("default")["z"]; st.State != api.StateStopped {
		t.Errorf("z, stopped before the crash, is %s after the relaunch", st.State)
	}
}

// rawRequest writes an HTTP request to the service's socket and returns
// the connection without reading the answer.
func rawRequest(t *testing.T, socket, method, path, body string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, api.Host, len(body), body)
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return c
}

// The service and the guardian of one agent are SIGKILLed at the same
// moment, as an OOM kill or a kill -9 of both does: the dead guardian's
// tree, which no service is left to stop, is stopped by the other
// agent's guardian within its stop timeout, and every private directory
// and lock goes with it (I2).
func TestServiceKilledWithAGuardian(t *testing.T) {
	w, bash, script := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const stop = time.Second
	w.writeConfig("agents:\n" +
		misbehavingYAML("x", bash, script, m+"-x", true, stop) +
		politeYAML("y", bash, m+"-y", true))
	svc := w.startService("default")
	row := w.waitRow("default", "x", api.StateRunning, nil)
	w.waitState("default", "y", api.StateRunning)
	waitTrees(t, m+"-x", 1)

	begin := time.Now()
	if err := svc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(row.GuardianPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-svc.done
	took := w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
	t.Logf("both trees, private dirs and locks gone %v after the SIGKILLs (stop timeout %v)", took, stop)
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running after their teardown: %v", left)
	}
}

// The service is SIGKILLed 0-5 ms after a start request reached its
// socket: before it read it, while it records the intent, while the
// guardian is spawned or inside the guardian's handshake. Whatever the
// moment, nothing is left, and a relaunch follows the intent that was
// recorded, or not, before the crash.
func TestOwnerKilledDuringStart(t *testing.T) {
	w, bash, script := crashWorld(t)
	rng := testRand(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const stop = 250 * time.Millisecond
	w.writeConfig("agents:\n" + misbehavingYAML("x", bash, script, m, false, stop))
	for round := range 10 {
		svc := w.startService("default")
		delay := time.Duration(rng.Int64N(int64(5*time.Millisecond) + 1))
		conn := rawRequest(t, w.socket("default"), "POST", api.PathStart, `{"ids":["x"]}`)
		time.Sleep(delay) // the crash's moment, drawn at random
		begin := time.Now()
		svc.kill()
		conn.Close()
		procs, guardians := len(procsWith(m)), adoptedNow()
		took := w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
		if left := reapAdopted(5 * time.Second); len(left) > 0 {
			t.Fatalf("round %d: guardians still running after their teardown: %v", round, left)
		}
		// A guardian that read its start request just before the crash
		// may start the agent after the first look: nothing may be left
		// once every guardian has exited.
		w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
		enabled, _ := w.intent("default", "x")
		t.Logf("round %d: SIGKILL %v after the request: %d guardian(s) orphaned, %d marked process(es), all gone after %v; enabled: %v",
			round, delay, guardians, procs, took, enabled)

		svc = w.startService("default")
		if enabled {
			w.waitState("default", "x", api.StateRunning)
			waitTrees(t, m, 1)
			exactlyOnce(t, 200*time.Millisecond, map[string]int{m: 1})
			// The next round starts from a stopped, disabled agent.
			w.mustRun("stop", "x")
		} else {
			exactlyOnce(t, 200*time.Millisecond, map[string]int{m: 0})
			if st := w.status("default")["x"]; st.State != api.StateStopped {
				t.Fatalf("round %d: x, never enabled, is %s after the relaunch", round, st.State)
			}
		}
		if err := w.client("default").Quit(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-svc.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the service did not quit", round)
		}
		w.waitOwnerGone("default", m, time.Now(), 5*time.Second)
	}
}

// The service is SIGKILLed 100-500 ms into the stop of an agent that
// ignores SIGTERM (stop timeout 1 s): the orphaned guardian finishes the
// stop, on time. The stop had already disabled the agent, so a relaunch
// leaves it stopped, and brings the other, enabled, agent back once.
func TestOwnerKilledDuringStop(t *testing.T) {
	w, bash, script := crashWorld(t)
	rng := testRand(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	const stop = time.Second
	w.writeConfig("agents:\n" +
		misbehavingYAML("x", bash, script, m+"-x", true, stop) +
		politeYAML("y", bash, m+"-y", true))
	svc := w.startService("default")
	w.waitState("default", "y", api.StateRunning)
	waitTrees(t, m+"-x", 1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		_, err := w.client("default").Stop(ctx, "x")
		stopped <- err
	}()
	stopping := time.Now()
	w.waitState("default", "x", api.StateStopping)
	delay := 100*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond)+1))
	time.Sleep(time.Until(stopping.Add(delay))) // the crash's moment, drawn at random
	begin := time.Now()
	if treeOf(m+"-x").all == 0 {
		t.Fatalf("the TERM-ignoring tree was gone %v into a stop with a %v timeout", begin.Sub(stopping), stop)
	}
	svc.kill()
	select {
	case err := <-stopped:
		if err == nil {
			t.Errorf("the stop request succeeded although its service was killed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stop request did not end with its service")
	}
	took := w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
	t.Logf("SIGKILL %v into the stop; trees, private dirs and locks gone %v later (%v after the stop began)",
		begin.Sub(stopping), took, time.Since(stopping))
	if left := reapAdopted(5 * time.Second); len(left) > 0 {
		t.Fatalf("guardians still running after their teardown: %v", left)
	}
	// Nothing came back before the guardians exited.
	w.waitOwnerGone("default", m, begin, stop+ownerGoneMargin)
	if enabled, _ := w.intent("default", "x"); enabled {
		t.Fatal("the stop did not record x as disabled before the crash")
	}

	w.startService("default")
	w.waitState("default", "y", api.StateRunning)
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 0, m + "-y": 1})
	if st := w.status("default")["x"]; st.State != api.StateStopped {
		t.Errorf("x, stopped when the service died, is %s after the relaunch", st.State)
	}
}
