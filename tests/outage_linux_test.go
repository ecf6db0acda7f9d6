package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as an agent of a relay: "relay-client ADDR
// MARKER" connects to ADDR and holds the connection; it exits 2 when it
// cannot connect and 3 when the relay drops it, as an agent that needs
// its relay does.
func init() {
	testproc.Register("relay-client", helperRelayClient)
}

func helperRelayClient(args []string) int {
	conn, err := net.DialTimeout("tcp", args[0], 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay-client:", err)
		return 2
	}
	_, _ = io.Copy(io.Discard, conn)
	fmt.Fprintln(os.Stderr, "relay-client: the relay hung up")
	return 3
}

// relay is a local TCP relay the test takes down and brings back on the
// same address. It holds every connection until it goes down.
type relay struct {
	t    *testing.T
	addr string
	mu   sync.Mutex
	ln   net.Listener
	conn []net.Conn
}

func newRelay(t *testing.T) *relay {
	r := &relay{t: t}
	r.up("127.0.0.1:0")
	t.Cleanup(r.down)
	return r
}

// up listens on addr (the relay's own, once it has one).
func (r *relay) up(addr string) {
	r.t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatalf("relay up on %s: %v", addr, err)
	}
	r.mu.Lock()
	r.ln, r.addr = ln, ln.Addr().String()
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conn = append(r.conn, c)
			r.mu.Unlock()
		}
	}()
}

// down closes the listener and every connection: the relay's clients
// are dropped, and new ones refused.
func (r *relay) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for _, c := range r.conn {
		c.Close()
	}
	r.conn = nil
}

// An outage of the relay: the agent that names it in needs waits offline
// (shown so by status --json), its endings not counted toward its crash
// loop however many outages there are, and it starts within a few seconds
// of the relay's return, though a loopback relay raises no network
// event. The agent without needs, under the default crash_loop, is never
// parked, and runs again once the relay is back.
func TestRelayOutageParksNoAgent(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	r := newRelay(t)
	client := strings.Join(quoteAll(testproc.Argv("relay-client", r.addr, m)), ", ")
	w.writeConfig(fmt.Sprintf(`restart: {backoff: 50ms, max_backoff: 1s}
agents:
  - id: needy
    command: [%s]
    autostart: true
    needs: {tcp: %q}
    restart: {crash_loop: {failures: 3, within: 10m}}
  - id: plain
    command: [%s]
    autostart: true
`, client, r.addr, client))
	w.startService("default")
	w.waitState("default", "needy", api.StateRunning)
	w.waitState("default", "plain", api.StateRunning)

	// More outages than needy's crash loop allows failures.
	for i := range 4 {
		r.down()
		row := w.waitState("default", "needy", api.StateOffline)
		if row.Error == nil || row.Error.Code != api.CodeUnreachable || !strings.Contains(row.Error.Message, r.addr) {
			t.Fatalf("outage %d: needy offline with %+v, want unreachable naming %s", i, row.Error, r.addr)
		}
		if i == 0 {
			// status --json says so too.
			if got := w.status("default")["needy"]; got.State != api.StateOffline || got.Error == nil || got.Error.Code != api.CodeUnreachable {
				t.Fatalf("status --json: needy %+v %+v", got, got.Error)
			}
			// Long enough for plain to fail more than the old rule's
			// five times in a row.
			testproc.UntilEvery(30*time.Second, 50*time.Millisecond, func() bool {
				return w.status("default")["plain"].Restarts >= 7
			})
		}
		back := time.Now()
		r.up(r.addr)
		w.waitState("default", "needy", api.StateRunning)
		took := time.Since(back)
		t.Logf("outage %d: needy ran again %v after the relay came back", i, took.Round(time.Millisecond))
		// The re-check runs every 2 s; a few seconds more for a loaded
		// machine.
		if took > 6*time.Second {
			t.Errorf("outage %d: needy started %v after the relay came back, want within a few seconds", i, took)
		}
		w.waitState("default", "plain", api.StateRunning)
	}
	rows := w.status("default")
	for _, id := range []string{"needy", "plain"} {
		if a := rows[id]; a.State != api.StateRunning || a.Error != nil && a.Error.Code == api.CodeCrashLoop {
			t.Errorf("%s after the outages: %+v %+v", id, a, a.Error)
		}
	}
	if n := rows["plain"].Restarts; n < 7 {
		t.Errorf("plain restarted %d times, want at least 7 (more than a crash loop of old)", n)
	}
}

// quoteAll quotes each argument for a YAML flow list.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprintf("%q", a)
	}
	return out
}

// systemBus is a private bus standing in for the system bus, on which the
// test owns org.freedesktop.login1 and announces suspends as logind does.
type systemBus struct {
	addr string
	conn *dbus.Conn
	mon  chan *dbus.Message
}

// startSystemBus starts the stand-in system bus, with a monitor of the
// matches its clients add.
func startSystemBus(t *testing.T, dir string) *systemBus {
	t.Helper()
	needTools(t, "dbus-daemon")
	conf := filepath.Join(dir, "sysbus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, filepath.Join(dir, "sysbus"))), 0o600); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=3")
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	b := &systemBus{}
	select {
	case b.addr = <-line:
	case <-time.After(20 * time.Second):
		t.Fatal("dbus-daemon gave no address within 20s")
	}
	if b.conn, err = dbus.Connect(b.addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.conn.Close() })
	if r, err := b.conn.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning org.freedesktop.login1: %v %v", r, err)
	}
	mon, err := dbus.Connect(b.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Close() })
	if call := mon.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, []string{"type='method_call',member='AddMatch'"}, uint32(0)); call.Err != nil {
		t.Fatal(call.Err)
	}
	b.mon = make(chan *dbus.Message, 64)
	mon.Eavesdrop(b.mon)
	return b
}

// waitSubscribed waits until someone asks the bus for PrepareForSleep.
func (b *systemBus) waitSubscribed(t *testing.T) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m := <-b.mon:
			if len(m.Body) == 1 && strings.Contains(fmt.Sprint(m.Body[0]), "PrepareForSleep") {
				return
			}
		case <-deadline:
			t.Fatal("nobody subscribed to PrepareForSleep")
		}
	}
}

// prepareForSleep announces a suspend (true) or a resume (false).
func (b *systemBus) prepareForSleep(t *testing.T, start bool) {
	t.Helper()
	if err := b.conn.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForSleep", start); err != nil {
		t.Fatal(err)
	}
}

// After a resume (logind's PrepareForSleep(false)), the agents are looked
// at at once: one that died during the sleep is restarted at once, not
// after its backoff, and one waiting in a long backoff starts at once.
func TestResumeRestartsWithoutBackoff(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	bus := startSystemBus(t, w.dir)
	w.env = append(w.env, "DBUS_SYSTEM_BUS_ADDRESS="+bus.addr)
	gate := filepath.Join(w.dir, "gate")
	w.writeConfig(fmt.Sprintf(`restart: {backoff: 10m}
agents:
  - id: sleeper
    command: [/bin/sh, -c, 'sleep 1000 & wait', %[1]s]
    autostart: true
  - id: late
    command: [/bin/sh, -c, 'test -e "$0" || exit 3; sleep 1000 & wait', %[2]s, %[1]s]
    autostart: true
`, m, gate))
	svc := w.startService("default")
	bus.waitSubscribed(t)
	before := w.waitState("default", "sleeper", api.StateRunning)
	w.waitState("default", "late", api.StateBackoff) // for 10 minutes
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	bus.prepareForSleep(t, true)
	testproc.Eventually(t, 15*time.Second, func() bool { return strings.Contains(svc.output(), "the machine suspends") },
		"the service never heard of the suspend:\n%s", svc.output())
	// The agent dies while the machine sleeps.
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	bus.prepareForSleep(t, false)
	resumed := time.Now()
	var after statusRow
	testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool {
		after = w.status("default")["sleeper"]
		return after.State == api.StateRunning && after.PID != before.PID
	})
	if after.State != api.StateRunning || after.PID == before.PID {
		t.Fatalf("sleeper after the resume: %+v %+v, want running again at once, not in 10m", after, after.Error)
	}
	w.waitState("default", "late", api.StateRunning)
	t.Logf("both ran again %v after the resume", time.Since(resumed).Round(time.Millisecond))
	if rows := w.status("default"); rows["sleeper"].Restarts != 1 || rows["late"].Restarts != 1 {
		t.Errorf("restarts: sleeper %d, late %d; want 1 each", rows["sleeper"].Restarts, rows["late"].Restarts)
	}
}
