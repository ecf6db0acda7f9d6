package service

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
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
