package service

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/netwatch"
)

// offlineWaits counts the goroutines that wait for an agent's needs.
func offlineWaits() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*actor).goOffline.func")
}

// closeListener closes ln and waits until a connect to its address is
// refused: a process forked meanwhile (a guardian, ahead of need) holds
// the socket open until it execs.
func closeListener(t *testing.T, ln net.Listener) {
	t.Helper()
	ln.Close()
	testproc.Eventually(t, 10*time.Second, func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	}, "%s still accepts after its listener closed", ln.Addr())
}

// An agent whose needs are unreachable is offline, and a start says why;
// it starts once they are reachable, with no network event for a
// loopback address; a stop while offline ends the wait.
func TestOfflineUntilReachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	closeListener(t, ln)
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    needs: {tcp: "` + addr + `"}
    stop_timeout: 2s
`)
	c := w.controller(Options{})
	ctx := context.Background()
	_, err = c.Start(ctx, "a", false)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnreachable || !strings.Contains(ae.Message, addr) {
		t.Fatalf("start: %v, want unreachable naming %s", err, addr)
	}
	if row := waitState(t, c, "a", api.StateOffline); !row.Enabled || row.PID != 0 {
		t.Fatalf("offline row %+v", row)
	}

	if ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	row := waitState(t, c, "a", api.StateRunning)
	t.Logf("running %v after the address listened again", time.Since(back).Round(time.Millisecond))
	if row.Error != nil {
		t.Errorf("running with %+v", row.Error)
	}
	if _, err := c.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}

	closeListener(t, ln)
	if _, err := c.Start(ctx, "a", false); !errors.As(err, &ae) || ae.Code != api.CodeUnreachable {
		t.Fatalf("second start: %v", err)
	}
	waitState(t, c, "a", api.StateOffline)
	if n := offlineWaits(); n != 1 {
		t.Fatalf("%d waits while offline, want 1", n)
	}
	if _, err := c.Stop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if row := waitState(t, c, "a", api.StateStopped); row.Enabled {
		t.Errorf("stopped, yet enabled: %+v", row)
	}
	testproc.Eventually(t, 10*time.Second, func() bool { return offlineWaits() == 0 },
		"a stop while offline left %d waits", offlineWaits())
}

// netnsEnv names the test that the copy of the test binary in a network
// namespace of its own runs.
const netnsEnv = "TETHER_TEST_NETNS"

// inOwnNetns runs the calling test alone in a copy of the test binary in
// a network namespace of its own (unshare(1), as root), where the
// machine's network is out of sight and the test may make its own, and
// reports whether the caller is that copy.
func inOwnNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == t.Name() {
		return true
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			testproc.SkipOrFail(t, "%s not found (util-linux, iproute2): %v", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "a network namespace of its own needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--net", "--", testproc.Executable()},
		testproc.AloneArgs(t.Name(), 2*time.Minute)...)...)
	cmd.Env = append(testproc.Environ(), netnsEnv+"="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	testproc.ReportAlone(t, "in a network namespace of its own", err, out.Bytes())
	return false
}

// ip runs ip(8) with args.
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// needs: network, in a network namespace with only its loopback: the
// agent waits offline, through re-checks and link changes that bring no
// network, and starts as soon as an interface comes up with an address,
// told by netlink, well before the next re-check.
func TestOfflineUntilNetwork(t *testing.T) {
	if !inOwnNetns(t) {
		return
	}
	ip(t, "link", "set", "lo", "up")
	if netwatch.Up() {
		t.Fatal("a network is up in a namespace with only its loopback")
	}
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    needs: network
    stop_timeout: 2s
`)
	c := w.controller(Options{})
	events, cancel := c.Subscribe(nil, 0)
	defer cancel()
	_, err := c.Start(context.Background(), "a", false)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnreachable || !strings.Contains(ae.Message, "the network") {
		t.Fatalf("start: %v, want unreachable naming the network", err)
	}
	row := waitState(t, c, "a", api.StateOffline)
	if row.Error == nil || row.Error.Code != api.CodeUnreachable || row.PID != 0 {
		t.Fatalf("offline row %+v %+v", row, row.Error)
	}

	// A link with an address, down, and its peer up: changes, but no
	// network yet.
	if out, err := exec.Command("ip", "link", "add", "tn0", "type", "veth", "peer", "name", "tn1").CombinedOutput(); err != nil {
		testproc.SkipOrFail(t, "no veth link can be made here: %v: %s", err, out)
	}
	ip(t, "addr", "add", "192.0.2.1/24", "dev", "tn0")
	ip(t, "link", "set", "tn1", "up")
	// Offline through a re-check too, and past it: from here, only the
	// OS's signal starts it before the next one.
	past := row.Since.Add(needsRecheck + needsRecheck/4)
	if testproc.UntilEvery(time.Until(past), 20*time.Millisecond, func() bool {
		return c.row("a").State != api.StateOffline
	}) {
		t.Fatalf("left offline with no network: %+v", c.row("a"))
	}

	up := time.Now()
	ip(t, "link", "set", "tn0", "up")
	timeout := time.After(10 * time.Second)
	for row.State != api.StateStarting {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Type == api.EventAgent && ev.Agent != nil && ev.Agent.ID == "a" {
				row = *ev.Agent
			}
		case <-timeout:
			t.Fatalf("not started 10s after the network came up: %+v", c.row("a"))
		}
	}
	took := row.Since.Sub(up)
	t.Logf("starting %v after the link came up", took.Round(time.Millisecond))
	if took >= needsRecheck/2 {
		t.Errorf("started %v after the network came up: the re-check's doing, not the OS's signal", took.Round(time.Millisecond))
	}
	if row = waitState(t, c, "a", api.StateRunning); row.Error != nil {
		t.Errorf("running with %+v", row.Error)
	}
}
