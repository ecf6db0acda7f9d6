package tests

import (
	"context"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"golang.org/x/sys/unix"
)

// notifyCall is one org.freedesktop.Notifications.Notify call seen on the
// desktop's bus, and the id the server answered.
type notifyCall struct {
	sender     string
	serial     uint32
	replacesID uint32
	summary    string
	body       string
	actions    []string // key, label, key, label, ...
	urgency    byte
	hasImage   bool
	expire     int32
	id         uint32
}

// labels are the labels of the call's actions.
func (c notifyCall) labels() []string {
	var out []string
	for i := 1; i < len(c.actions); i += 2 {
		out = append(out, c.actions[i])
	}
	return out
}

// notifyLog records every Notify call on the bus, with its answer, from a
// monitor connection (org.freedesktop.DBus.Monitoring.BecomeMonitor).
type notifyLog struct {
	mu     sync.Mutex
	calls  []notifyCall
	closed []uint32 // the ids of CloseNotification calls
}

// monitorNotify starts recording the Notify calls on the desktop's bus.
func (d *desktop) monitorNotify() *notifyLog {
	d.t.Helper()
	conn, err := dbus.Connect(d.bus)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { conn.Close() })
	rules := []string{
		"type='method_call',interface='org.freedesktop.Notifications',member='Notify'",
		"type='method_call',interface='org.freedesktop.Notifications',member='CloseNotification'",
		"type='method_return'",
	}
	if call := conn.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, rules, uint32(0)); call.Err != nil {
		d.t.Fatalf("BecomeMonitor: %v", call.Err)
	}
	msgs := make(chan *dbus.Message, 256)
	conn.Eavesdrop(msgs)
	l := &notifyLog{}
	go func() {
		for m := range msgs {
			l.take(m)
		}
	}()
	return l
}

func (l *notifyLog) take(m *dbus.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sender, _ := m.Headers[dbus.FieldSender].Value().(string)
	switch m.Type {
	case dbus.TypeMethodCall:
		if member, _ := m.Headers[dbus.FieldMember].Value().(string); member == "CloseNotification" && len(m.Body) == 1 {
			id, _ := m.Body[0].(uint32)
			l.closed = append(l.closed, id)
			return
		}
		if len(m.Body) != 8 {
			return
		}
		c := notifyCall{sender: sender, serial: m.Serial()}
		c.replacesID, _ = m.Body[1].(uint32)
		c.summary, _ = m.Body[3].(string)
		c.body, _ = m.Body[4].(string)
		c.actions, _ = m.Body[5].([]string)
		hints, _ := m.Body[6].(map[string]dbus.Variant)
		c.urgency, _ = hints["urgency"].Value().(byte)
		_, c.hasImage = hints["image-data"]
		c.expire, _ = m.Body[7].(int32)
		l.calls = append(l.calls, c)
	case dbus.TypeMethodReply:
		dest, _ := m.Headers[dbus.FieldDestination].Value().(string)
		serial, _ := m.Headers[dbus.FieldReplySerial].Value().(uint32)
		for i := range l.calls {
			if c := &l.calls[i]; c.sender == dest && c.serial == serial && len(m.Body) == 1 {
				c.id, _ = m.Body[0].(uint32)
			}
		}
	}
}

func (l *notifyLog) all() []notifyCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// closes reports whether the tray asked the server to close bubble id.
func (l *notifyLog) closes(id uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.closed, id)
}

// wait waits for a call whose summary contains summary, and that the
// server answered.
func (l *notifyLog) wait(t *testing.T, within time.Duration, summary string) notifyCall {
	t.Helper()
	var found notifyCall
	if !testproc.UntilEvery(within, 20*time.Millisecond, func() bool {
		for _, c := range l.all() {
			if strings.Contains(c.summary, summary) && c.id != 0 {
				found = c
				return true
			}
		}
		return false
	}) {
		var got []string
		for _, c := range l.all() {
			got = append(got, c.summary)
		}
		t.Fatalf("no notification %q within %v; sent: %q", summary, within, got)
	}
	return found
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of pid: each is a wakeup.
func contextSwitches(t *testing.T, pid int) int64 {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("the tray's threads: %v", err)
	}
	var n int64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// wakesIn counts pid's context switches over d: a measuring window, not a
// wait for anything.
func wakesIn(t *testing.T, pid int, d time.Duration) int64 {
	t.Helper()
	before := contextSwitches(t, pid)
	time.Sleep(d)
	return contextSwitches(t, pid) - before
}

// waitStill waits until pid's count of context switches has stood still
// for a whole period, and fails the test if that has not happened within
// limit.
func waitStill(t *testing.T, pid int, period, limit time.Duration) {
	t.Helper()
	prev := int64(-1)
	if !testproc.UntilEvery(limit, period, func() bool {
		cur := contextSwitches(t, pid)
		still := cur == prev
		prev = cur
		return still
	}) {
		t.Fatalf("pid %d kept waking for %v (%d context switches so far)", pid, limit, prev)
	}
}

// fakeOpener puts an xdg-open first on PATH that only records what it
// was asked to open, and returns the PATH entry and the record's file.
func fakeOpener(t *testing.T) (pathEnv, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "opened.txt")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\n", record)
	if err := os.WriteFile(filepath.Join(dir, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return "PATH=" + dir + ":" + os.Getenv("PATH"), record
}

// failOnceConfig is a config of agents that exit 3 until flag exists,
// and then run; restart never, so a failure parks them in failed at once.
func failOnceConfig(marker, flag string, ids ...string) string {
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n    command: [/bin/sh, -c, 'test -e %s && exec sleep 1000; exit 3', %s]\n    autostart: true\n    restart: never\n    stop_timeout: 300ms\n", id, flag, marker)
	}
	return b.String()
}

// TestTrayNotificationActions: on a real notification server (dunst), a
// failed agent's notice offers Open log, Start again and Open config;
// picking them in dunst's context menu makes the server send
// ActionInvoked, and the tray carries them out: Start again starts the
// agent through the service, Open log runs the desktop's opener on its
// log. An agent that runs again has its failure's bubble taken down; a
// new failure gets a new one. Copy error puts the error on the X
// clipboard, and a rejected Reload config says why on one line.
func TestTrayNotificationActions(t *testing.T) {
	needTools(t, "xclip")
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	flag := filepath.Join(w.dir, "flag")
	w.writeConfig(failOnceConfig(m, flag, "bob", "carol", "dave"))
	w.startService("default")
	for _, id := range []string{"bob", "carol", "dave"} {
		w.waitState("default", id, api.StateFailed)
	}
	pathEnv, opened := fakeOpener(t)
	tr := d.startTrayEnv(w, "default", pathEnv)
	item := d.waitItem(tr.pid, 15*time.Second)

	bob := notes.wait(t, 15*time.Second, "bob failed")
	notes.wait(t, 15*time.Second, "carol failed")
	dave := notes.wait(t, 15*time.Second, "dave failed")
	if got := bob.labels(); !slices.Equal(got, []string{"Open log", "Start again", "Open config"}) || bob.actions[0] != "default" {
		t.Errorf("bob's notice offers %q (keys %q), want Open log (the default), Start again, Open config", got, bob.actions)
	}
	if !bob.hasImage || bob.urgency != 1 || !strings.Contains(bob.body, "exit status 3") {
		t.Errorf("bob's notice: image %v, urgency %d, body %q; want an icon, normal urgency, the exit status", bob.hasImage, bob.urgency, bob.body)
	}

	// Start again, picked in the server's menu: the service starts bob.
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d.pickAction("#Start again (tether: bob failed)")
	w.waitState("default", "bob", api.StateRunning)
	t.Log("Start again on bob's notice started bob")

	// Open log: the opener gets carol's log.
	d.pickAction("#Open log (tether: carol failed)")
	waitFileContains(t, opened, filepath.Join("carol.log"))
	t.Log("Open log on carol's notice opened carol's log")

	// dave runs: its failure's bubble is taken down. It fails again:
	// a new bubble says so.
	if _, err := w.client("default").Start(context.Background(), "dave"); err != nil {
		t.Fatal(err)
	}
	dv := w.waitState("default", "dave", api.StateRunning)
	if !testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool { return notes.closes(dave.id) }) {
		t.Errorf("dave runs, and its failure's bubble %d is still up", dave.id)
	}
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	if err := syscallKill(dv.PID); err != nil {
		t.Fatal(err)
	}
	w.waitState("default", "dave", api.StateFailed)
	if !testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool {
		return slices.ContainsFunc(notes.all(), func(c notifyCall) bool {
			return strings.Contains(c.summary, "dave failed") && c.replacesID == 0 && c.id != 0 && c.id != dave.id
		})
	}) {
		t.Fatalf("dave's second failure got no bubble of its own: %+v", notes.all())
	}

	// Copy error: carol's whole error on the clipboard. The menu may be
	// rebuilt between its read and the click (dave's row changed just
	// before), and a click on an item that is gone does nothing, as for
	// a person: the item is found and clicked again, each time in the
	// menu as it is then, until the clipboard has the error.
	copyError := func() {
		menu := d.waitMenu(item, "carol's Copy error", func(n menuNode) bool {
			c, ok := n.find("carol: failed", "Copy error")
			return ok && c.enabled
		})
		cp, _ := menu.find("carol: failed", "Copy error")
		d.click(item, cp.id)
	}
	copyError()
	clicks, clicked := 1, time.Now()
	var out string
	if !testproc.UntilEvery(15*time.Second, 50*time.Millisecond, func() bool {
		var err error
		out, _, err = runBounded(t, d.command("xclip", "-o", "-selection", "clipboard"), 10*time.Second)
		if err == nil && strings.HasPrefix(out, "carol (carol): exited") && strings.Contains(out, "exit status 3") {
			return true
		}
		if time.Since(clicked) > 3*time.Second {
			copyError()
			clicks, clicked = clicks+1, time.Now()
		}
		return false
	}) {
		t.Fatalf("the clipboard has %q after %d clicks on Copy error, want carol's error", out, clicks)
	}
	t.Logf("Copy error (%d clicks): %q", clicks, out)

	// Reload config with a broken config: the cause, on one line.
	w.writeConfig("agents:\n  - id: bob\n    comand: [x]\n")
	menu := d.waitMenu(item, "Reload config", func(n menuNode) bool { r, ok := n.find("Reload config"); return ok && r.enabled })
	rl, _ := menu.find("Reload config")
	d.click(item, rl.id)
	c := notes.wait(t, 15*time.Second, "config not applied")
	first, _, _ := strings.Cut(c.body, "\n")
	if !strings.HasPrefix(first, "agents.yaml:") || !strings.Contains(first, "agents[0]") || strings.Contains(c.body, "config: config") || !slices.Equal(c.labels(), []string{"Open config"}) {
		t.Errorf("rejected config notice %q (actions %q)", c.body, c.labels())
	}
	t.Logf("rejected config: %q", first)
	menu = d.waitMenu(item, "the config error line", func(n menuNode) bool {
		l, ok := n.find("config not applied: agents.yaml:")
		return ok && !strings.Contains(l.label, "config: config")
	})
	l, _ := menu.find("config not applied: ")
	t.Logf("the menu's line: %q", l.label)
}

// TestTrayBurstOfFailures: eight agents failing at once are all named in
// dunst's bubbles: three of their own and one summary for the rest.
func TestTrayBurstOfFailures(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	trigger := filepath.Join(w.dir, "trigger")
	var b strings.Builder
	b.WriteString("agents:\n")
	var ids []string
	for i := range 8 {
		id := fmt.Sprintf("a%d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  - id: %s\n    command: [/bin/sh, -c, 'while ! test -e %s; do sleep 0.02; done; exit 3', %s]\n    autostart: true\n    restart: never\n", id, trigger, m)
	}
	w.writeConfig(b.String())
	w.startService("default")
	for _, id := range ids {
		w.waitState("default", id, api.StateRunning)
	}
	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	d.waitMenu(item, "8 running", func(n menuNode) bool { return n.children[0].label == "8 running" })
	if err := os.WriteFile(trigger, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		w.waitState("default", id, api.StateFailed)
	}
	summary := notes.wait(t, 15*time.Second, "5 more agents failed")
	t.Logf("summary: %q / %q", summary.summary, summary.body)
	// Every agent named in some bubble dunst showed.
	var all string
	var missing []string
	if !testproc.UntilEvery(15*time.Second, 100*time.Millisecond, func() bool {
		all, missing = strings.Join(d.notifications(), "\n"), nil
		for _, id := range ids {
			if !strings.Contains(all, id+" failed") && !strings.Contains(all, " "+id+",") && !strings.Contains(all, " "+id+"\n") && !strings.HasSuffix(all, " "+id) {
				missing = append(missing, id)
			}
		}
		return len(missing) == 0
	}) {
		t.Fatalf("agents never named in a bubble: %v; dunst showed:\n%s", missing, all)
	}
	var own int
	for _, c := range notes.all() {
		if strings.HasSuffix(c.summary, " failed") && strings.HasPrefix(c.summary, "tether: a") {
			own++
		}
	}
	if own != 3 {
		t.Errorf("%d bubbles of their own, want 3 (and a summary)", own)
	}
}

// TestTrayIdleAndUptime: with nothing happening, the tray does not wake
// (no timer); its uptimes are computed when the menu is built, and the
// host's opening of the menu rebuilds it.
func TestTrayIdleAndUptime(t *testing.T) {
	d := newDesktop(t, true)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf("agents:\n  - id: alice\n    identity: alice@relay\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    stop_timeout: 300ms\n", m))
	w.startService("default")
	alice := w.waitState("default", "alice", api.StateRunning)
	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	d.waitMenu(item, "alice running <1m", func(n menuNode) bool { _, ok := n.find("alice: running <1m"); return ok })
	// Past the tray's settling render (2.1 s after its start) and the
	// host's and the login registrations' reads: its count of context
	// switches stands still for longer than the first takes to come.
	waitStill(t, tr.pid, 3*time.Second, 30*time.Second)

	const idle = 30 * time.Second
	woke := wakesIn(t, tr.pid, idle)
	t.Logf("the idle tray woke %d times in %v", woke, idle)
	if woke != 0 {
		t.Errorf("the idle tray woke %d times in %v, want 0", woke, idle)
	}

	// A minute after alice started, the title computed at the last
	// rebuild still says <1m: nothing rebuilt it on a timer.
	if wait := time.Until(alice.Since.Add(61 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	menu := d.waitMenu(item, "the menu as last built", func(menuNode) bool { return true })
	if _, ok := menu.find("alice: running <1m"); !ok {
		t.Errorf("the menu changed with nothing happening:%s", menu)
	}
	// The host opens the menu: the tray rebuilds it with the age of now.
	_, top := d.openMenu(func(image.Image, int, int) bool { return true })
	d.waitMenu(item, "alice running 1m", func(n menuNode) bool { _, ok := n.find("alice: running 1m"); return ok })
	d.closeMenu(top)
}

func syscallKill(pid int) error { return unix.Kill(pid, unix.SIGKILL) }

// fakeLogind is a second bus standing in for the system bus, on which the
// test owns org.freedesktop.login1 and announces suspends as logind does.
type fakeLogind struct {
	addr string
	conn *dbus.Conn
	mon  chan *dbus.Message
}

// startFakeLogind starts the stand-in system bus.
func (d *desktop) startFakeLogind() *fakeLogind {
	d.t.Helper()
	sock := filepath.Join(d.dir, "sysbus")
	conf := filepath.Join(d.dir, "sysbus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, sock)), 0o600); err != nil {
		d.t.Fatal(err)
	}
	l := &fakeLogind{addr: d.startWithFD("sysbus", d.env, "dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=3")}
	var err error
	if l.conn, err = dbus.Connect(l.addr); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { l.conn.Close() })
	if r, err := l.conn.RequestName("org.freedesktop.login1", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		d.t.Fatalf("owning org.freedesktop.login1: %v %v", r, err)
	}
	// A monitor, to see the tray subscribe.
	mon, err := dbus.Connect(l.addr)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { mon.Close() })
	if call := mon.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, []string{"type='method_call',member='AddMatch'"}, uint32(0)); call.Err != nil {
		d.t.Fatal(call.Err)
	}
	l.mon = make(chan *dbus.Message, 64)
	mon.Eavesdrop(l.mon)
	return l
}

// waitSubscribed waits until someone asks the bus for PrepareForSleep.
func (l *fakeLogind) waitSubscribed(t *testing.T) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case m := <-l.mon:
			if len(m.Body) == 1 && strings.Contains(fmt.Sprint(m.Body[0]), "PrepareForSleep") {
				return
			}
		case <-deadline:
			t.Fatal("the tray never subscribed to PrepareForSleep")
		}
	}
}

// prepareForSleep announces a suspend (true) or a resume (false).
func (l *fakeLogind) prepareForSleep(t *testing.T, start bool) {
	t.Helper()
	if err := l.conn.Emit("/org/freedesktop/login1", "org.freedesktop.login1.Manager.PrepareForSleep", start); err != nil {
		t.Fatal(err)
	}
}

// TestTraySuspendResume: the service stopping and coming back while the
// machine suspends and resumes (logind's PrepareForSleep) raises no
// notification; awake, the same raises "service stopped", then "service
// is back".
func TestTraySuspendResume(t *testing.T) {
	d := newDesktop(t, true)
	logind := d.startFakeLogind()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf("agents:\n  - id: alice\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    stop_timeout: 300ms\n", m))
	svc := w.startService("default")
	w.waitState("default", "alice", api.StateRunning)
	tr := d.startTrayEnv(w, "default", "DBUS_SYSTEM_BUS_ADDRESS="+logind.addr)
	logind.waitSubscribed(t)
	item := d.waitItem(tr.pid, 15*time.Second)
	connected := func(what string) {
		d.waitMenu(item, what, func(n menuNode) bool { _, ok := n.find("alice: running"); return ok })
	}
	connected("alice running")
	quit := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.client("default").Quit(ctx); err != nil {
			t.Fatal(err)
		}
	}

	logind.prepareForSleep(t, true)
	quit()
	<-svc.done
	d.waitMenu(item, "service not running", func(n menuNode) bool { return n.children[0].label == "service not running" })
	svc = w.startService("default")
	connected("alice running again")
	logind.prepareForSleep(t, false)
	// Past the settling after the resume, nothing was said.
	var said string
	if testproc.UntilEvery(12*time.Second, 200*time.Millisecond, func() bool {
		for _, n := range d.notifications() {
			if strings.Contains(n, "service") {
				said = n
				return true
			}
		}
		return false
	}) {
		t.Fatalf("a notification for what the suspend caused and the resume mended: %q", said)
	}

	// Awake, the same is announced, and so is the service's return.
	quit()
	<-svc.done
	n := d.waitNotification(15*time.Second, "service stopped")
	w.startService("default")
	b := d.waitNotification(15*time.Second, "service is back")
	t.Logf("awake: %q, then %q", n, b)
}

// TestTrayResumeOneNotice: agents die while the machine sleeps (logind's
// PrepareForSleep on a stand-in system bus, heard by the service and the
// tray alike). Those the service restarts after the resume are never
// announced, and the three that may not be restarted make one notice
// between them on a real notification server (dunst), naming each. When
// the restarts mend everything, nothing is said at all.
func TestTrayResumeOneNotice(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	logind := d.startFakeLogind()
	w := newWorld(t)
	w.env = append(w.env, "DBUS_SYSTEM_BUS_ADDRESS="+logind.addr)
	m := uniqueMarker()
	cleanupTrees(t, m)
	mended := []string{"m1", "m2", "m3"}
	broken := []string{"r1", "r2", "r3"}
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, id := range append(slices.Clone(mended), broken...) {
		restart := "on-failure"
		if id[0] == 'r' {
			restart = "never"
		}
		fmt.Fprintf(&b, "  - id: %s\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    restart: %s\n    stop_timeout: 300ms\n", id, m, restart)
	}
	w.writeConfig(b.String())
	svc := w.startService("default")
	logind.waitSubscribed(t)
	tr := d.startTrayEnv(w, "default", "DBUS_SYSTEM_BUS_ADDRESS="+logind.addr)
	logind.waitSubscribed(t)
	item := d.waitItem(tr.pid, 15*time.Second)
	d.waitMenu(item, "6 running", func(n menuNode) bool { return n.children[0].label == "6 running" })

	// sleep announces a suspend, and waits until the service and the
	// tray have both heard it, the nth time.
	sleep := func(n int) {
		logind.prepareForSleep(t, true)
		testproc.Eventually(t, 15*time.Second, func() bool {
			return strings.Count(svc.output(), "the machine suspends") >= n && strings.Count(tr.output(), "the machine suspends") >= n
		}, "the suspend was not heard:\nservice:\n%s\ntray:\n%s", svc.output(), tr.output())
	}
	// kill ends ids' agents, as a suspend that cut their connections
	// would, and returns their pids.
	kill := func(ids []string) map[string]int {
		rows := w.status("default")
		pids := map[string]int{}
		for _, id := range ids {
			pids[id] = rows[id].PID
			if err := syscallKill(rows[id].PID); err != nil {
				t.Fatal(err)
			}
		}
		return pids
	}
	restarted := func(pids map[string]int) {
		for id, pid := range pids {
			testproc.Eventually(t, 30*time.Second, func() bool {
				a := w.status("default")[id]
				return a.State == api.StateRunning && a.PID != pid
			}, "%s was not restarted after the resume: %+v", id, w.status("default")[id])
		}
	}

	// Every agent dies in the sleep: three are restarted, three fail.
	sleep(1)
	pids := kill(append(slices.Clone(mended), broken...))
	for _, id := range broken {
		w.waitState("default", id, api.StateFailed)
	}
	logind.prepareForSleep(t, false)
	resumed := time.Now()
	for _, id := range broken {
		delete(pids, id)
	}
	restarted(pids)
	n := notes.wait(t, 30*time.Second, "3 agents failed")
	t.Logf("%v after the resume: %q / %q", time.Since(resumed).Round(time.Millisecond), n.summary, n.body)
	for _, id := range broken {
		if !strings.Contains(n.summary, id) {
			t.Errorf("the notice %q does not name %s", n.summary, id)
		}
	}
	if strings.Contains(n.summary+n.body, "m1") || strings.Contains(n.summary, "more") {
		t.Errorf("the notice %q / %q names a mended agent, or more than the failed", n.summary, n.body)
	}
	// Nothing more comes: past the tray's last wakeup, one notice in all.
	waitStill(t, tr.pid, 500*time.Millisecond, 15*time.Second)
	if all := notes.all(); len(all) != 1 {
		t.Errorf("%d notices for one suspend, want 1: %+v", len(all), all)
	}

	// The mended agents die in the next sleep too: nothing at all is said,
	// past the settling after the resume.
	sleep(2)
	pids = kill(mended)
	logind.prepareForSleep(t, false)
	resumed = time.Now()
	restarted(pids)
	testproc.Eventually(t, 30*time.Second, func() bool {
		return strings.Count(tr.output(), "the machine resumed") >= 2
	}, "the tray did not hear the resume:\n%s", tr.output())
	if testproc.UntilEvery(15*time.Second, 100*time.Millisecond, func() bool { return len(notes.all()) > 1 }) {
		t.Errorf("a notice for what the restarts mended: %+v", notes.all()[1:])
	}
	t.Logf("nothing said within %v of the second resume", time.Since(resumed).Round(time.Second))
}

// notifydBubbles is the geometry of xfce4-notifyd's bubbles on screen
// now. It is read again with each screenshot: a bubble's window exists
// (at 0,0) before the server places it, and a bubble of normal urgency
// expires after the server's usual time.
func (d *desktop) notifydBubbles() []image.Rectangle {
	d.t.Helper()
	out, _, _ := runBounded(d.t, d.command("xdotool", "search", "--onlyvisible", "--class", "Xfce4-notifyd"), 10*time.Second)
	var rs []image.Rectangle
	for _, id := range strings.Fields(out) {
		geo, _, err := runBounded(d.t, d.command("xdotool", "getwindowgeometry", "--shell", id), 10*time.Second)
		if err != nil {
			continue // gone between the search and now
		}
		v := map[string]int{}
		for _, l := range strings.Fields(geo) {
			k, val, _ := strings.Cut(l, "=")
			v[k], _ = strconv.Atoi(val)
		}
		if v["WIDTH"] > 100 && v["HEIGHT"] > 50 {
			rs = append(rs, image.Rect(v["X"], v["Y"], v["X"]+v["WIDTH"], v["Y"]+v["HEIGHT"]))
		}
	}
	return rs
}

// buttons finds the row of buttons at the bottom of a bubble: the lowest
// band of rows that cross n runs of not-white pixels (separated by the
// bubble's white), each at least 40 px wide. It returns the runs' centres
// on the band's middle row.
func buttons(img image.Image, r image.Rectangle, n int) []image.Point {
	r = r.Intersect(img.Bounds())
	runsAt := func(y int) [][2]int {
		var runs [][2]int
		start := -1
		for x := r.Min.X + 2; x < r.Max.X-2; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			white := cr > 0xf800 && cg > 0xf800 && cb > 0xf800
			switch {
			case !white && start < 0:
				start = x
			case white && start >= 0:
				runs = append(runs, [2]int{start, x})
				start = -1
			}
		}
		return slices.DeleteFunc(runs, func(r [2]int) bool { return r[1]-r[0] < 40 })
	}
	bottom := -1
	for y := r.Max.Y - 4; y > r.Min.Y+r.Dy()/2; y-- {
		ok := len(runsAt(y)) == n
		switch {
		case ok && bottom < 0:
			bottom = y
		case !ok && bottom >= 0:
			mid := (y + 1 + bottom) / 2
			var out []image.Point
			for _, run := range runsAt(mid) {
				out = append(out, image.Pt((run[0]+run[1])/2, mid))
			}
			if bottom-y < 10 { // a line, not buttons
				bottom = -1
				continue
			}
			return out
		}
	}
	return nil
}

// TestTrayNotificationScreenshot: on a notification server that draws
// actions as buttons (xfce4-notifyd), a failed agent's notice shows Open
// log, Start again and Open config; clicking Start again starts it. The
// screenshot of the notice is kept at $TETHER_NOTIFICATION_SCREENSHOT
// when set (docs/notification.png is one).
func TestTrayNotificationScreenshot(t *testing.T) {
	d := newDesktopWith(t, deskOptions{panel: true, notifier: "xfce4-notifyd"})
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	flag := filepath.Join(w.dir, "flag")
	w.writeConfig(failOnceConfig(m, flag, "bob") + fmt.Sprintf("  - id: alice\n    identity: alice@relay\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    stop_timeout: 300ms\n", m))
	w.startService("default")
	w.waitState("default", "bob", api.StateFailed)
	tr := d.startTray(w, "default", false)
	d.waitItem(tr.pid, 15*time.Second)
	var r image.Rectangle
	var btns []image.Point
	shot := d.waitScreen("xfce4-notifyd's bubble with three buttons", func(img image.Image) bool {
		for _, bubble := range d.notifydBubbles() {
			if btns = buttons(img, bubble, 3); len(btns) == 3 {
				r = bubble
				return true
			}
		}
		return false
	})
	img, err := pngDecode(shot)
	if err != nil {
		t.Fatal(err)
	}
	// The bubble, with a margin of the desktop around it.
	crop := r.Inset(-12).Intersect(img.Bounds())
	path := filepath.Join(t.TempDir(), "notification.png")
	if p := os.Getenv("TETHER_NOTIFICATION_SCREENSHOT"); p != "" {
		path = p
	}
	if err := writePNG(path, img, crop); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the notice: %s (%v)", path, crop)

	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := btns[1] // Open log, Start again, Open config
	t.Logf("buttons at %v", btns)
	d.run(10*time.Second, "xdotool", "mousemove", fmt.Sprint(start.X), fmt.Sprint(start.Y))
	d.run(10*time.Second, "xdotool", "click", "1")
	w.waitState("default", "bob", api.StateRunning)
	t.Log("clicking Start again on the notice started bob")
}

// TestTrayNoticeOncePerEvent: Start all over broken agents, clicked in
// the tray, announces each failure once (the agent's row and the
// request's answer are one event), gathered with the burst into own
// bubbles and a summary that names each agent once; and the bubble of a
// failure that ends (the agent started fine) is taken down.
func TestTrayNoticeOncePerEvent(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	// Their program is not there yet: each start is a spawn failure,
	// which the start request answers with too.
	prog := filepath.Join(w.dir, "ghost-agent")
	var ids []string
	var b strings.Builder
	b.WriteString("agents:\n")
	for i := range 6 {
		id := fmt.Sprintf("ghost%d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  - id: %s\n    command: [%s, %s]\n    restart: never\n    stop_timeout: 300ms\n", id, prog, m)
	}
	w.writeConfig(b.String())
	w.startService("default")
	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	menu := d.waitMenu(item, "Start all", func(n menuNode) bool { s, ok := n.find("Start all"); return ok && s.enabled && s.visible })
	all, _ := menu.find("Start all")
	d.click(item, all.id)
	for _, id := range ids {
		w.waitState("default", id, api.StateFailed)
	}
	// Every agent named, each in exactly one bubble.
	callsNaming := func(id string) int {
		n := 0
		for _, c := range notes.all() {
			words := strings.FieldsFunc(c.summary+" "+c.body, func(r rune) bool { return r == ' ' || r == ',' || r == ':' || r == '\n' })
			if slices.Contains(words, id) {
				n++
			}
		}
		return n
	}
	if !testproc.UntilEvery(15*time.Second, 50*time.Millisecond, func() bool {
		return !slices.ContainsFunc(ids, func(id string) bool { return callsNaming(id) == 0 })
	}) {
		t.Fatalf("not every agent was named; sent: %+v", notes.all())
	}
	// A moment for a second announcement to arrive, if one would: the
	// request that Start all made returns after the rows.
	waitStill(t, tr.pid, 500*time.Millisecond, 10*time.Second)
	for _, id := range ids {
		if n := callsNaming(id); n != 1 {
			t.Errorf("%s named in %d notices, want 1", id, n)
		}
	}
	for _, c := range notes.all() {
		if strings.Contains(c.summary, "could not start") {
			t.Errorf("a request's failure announced apart from the agent's: %q", c.summary)
		}
	}

	// One with a bubble of its own starts fine: its bubble goes.
	var own notifyCall
	for _, c := range notes.all() {
		if strings.HasPrefix(c.summary, "tether: ghost") && strings.HasSuffix(c.summary, " failed") && c.id != 0 {
			own = c
			break
		}
	}
	if own.id == 0 {
		t.Fatalf("no bubble of its own; sent: %+v", notes.all())
	}
	id := strings.TrimSuffix(strings.TrimPrefix(own.summary, "tether: "), " failed")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := w.run(30*time.Second, "start", id); r.code != 0 {
		t.Fatalf("start %s: exit %d\n%s", id, r.code, r.stderr)
	}
	if !testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool { return notes.closes(own.id) }) {
		t.Errorf("%s runs, and its failure's bubble %d was not taken down", id, own.id)
	}
}

// A reload says what it did: `tether reload` prints it, the service logs
// it with the agents' ids, and Reload config in the tray says it in a
// notice.
func TestReloadSaysWhatItDid(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	agent := func(id, extra string) string {
		return fmt.Sprintf("  - id: %s\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    stop_timeout: 300ms\n%s", id, m, extra)
	}
	w.writeConfig("agents:\n" + agent("keep", "") + agent("change", "") + agent("drop", ""))
	svc := w.startService("default")
	w.waitState("default", "drop", api.StateRunning)
	w.writeConfig("agents:\n" + agent("keep", "") + agent("change", "    env: {X: \"1\"}\n") + agent("new1", "") + agent("new2", ""))
	if r := w.mustRun("reload"); r.stdout != "reloaded: 2 added, 1 restarted, 1 removed\n" {
		t.Errorf("tether reload printed %q", r.stdout)
	}
	if out := svc.output(); !strings.Contains(out, "added new1, new2; restarted change; removed drop") {
		t.Errorf("the service's log does not say what the reload did:\n%s", out)
	}

	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	menu := d.waitMenu(item, "Reload config", func(n menuNode) bool { r, ok := n.find("Reload config"); return ok && r.enabled })
	rl, _ := menu.find("Reload config")
	d.click(item, rl.id)
	if n := notes.wait(t, 15*time.Second, "config reloaded"); n.body != "nothing changed" || n.urgency != 0 {
		t.Errorf("the tray's reload notice: %q, urgency %d; want \"nothing changed\", low", n.body, n.urgency)
	}
}

// A sticky "would not stop" bubble goes as soon as the process it names
// dies: the guardian sees the death through its pidfd, not at its next
// retry, and the tray takes the bubble down.
func TestTrayCleanupNoticeGoesWithTheProcess(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	fz := newFreezer(t)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	_, child := frozenChild(t, fz, w, m)
	tr := d.startTray(w, "default", false)
	d.waitItem(tr.pid, 15*time.Second)
	if r := w.run(60*time.Second, "stop", "x"); r.code != 5 {
		t.Fatalf("stop with a frozen member: exit %d (want 5)\n%s%s", r.code, r.stdout, r.stderr)
	}
	stuck := notes.wait(t, 15*time.Second, "x would not stop")
	if stuck.urgency != 2 {
		t.Errorf("the bubble of a process that would not stop has urgency %d, want 2 (critical)", stuck.urgency)
	}
	if err := unix.Kill(child, 0); err != nil {
		t.Fatalf("the frozen child %d is gone already: %v", child, err)
	}
	// Each retry's report renews the row's since: wait for three (1, 2
	// and 4 s apart), so that the next is 8 s away.
	w.waitCleanupRetries(t, "x", 3)
	thawed := time.Now()
	fz.thaw()
	// Well before the guardian's next retry.
	if !testproc.UntilEvery(5*time.Second, 20*time.Millisecond, func() bool { return notes.closes(stuck.id) }) {
		t.Fatalf("the process died, and the bubble %d stays up; sent: %+v", stuck.id, notes.all())
	}
	t.Logf("the bubble went %v after the thaw", time.Since(thawed))
	if row := w.status("default")["x"]; row.State != api.StateStopped {
		t.Errorf("after the thaw: %s %+v, want stopped", row.State, row.Error)
	}
}

// A crash loop the person handles with Stop (in the tray's menu) takes
// its sticky bubble down: the agent is stopped, nothing is crashing any
// more.
func TestTrayCrashLoopNoticeGoesOnStop(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: loop
    command: [/bin/sh, -c, 'exit 3', %s]
    restart: {policy: always, backoff: 100ms, crash_loop: {failures: 3, within: 10m}}
    autostart: true
`, m))
	w.startService("default")
	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	w.waitAgent("loop", 30*time.Second, crashLooped)
	loop := notes.wait(t, 15*time.Second, "loop keeps crashing")
	if loop.urgency != 2 {
		t.Errorf("the crash loop's bubble has urgency %d, want 2 (critical)", loop.urgency)
	}
	menu := d.waitMenu(item, "loop's Stop", func(n menuNode) bool { s, ok := n.find("loop: failed", "Stop"); return ok && s.enabled })
	stop, _ := menu.find("loop: failed", "Stop")
	d.click(item, stop.id)
	w.waitState("default", "loop", api.StateStopped)
	if !testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool { return notes.closes(loop.id) }) {
		t.Fatalf("loop was stopped, and its crash loop's bubble %d stays up; sent: %+v", loop.id, notes.all())
	}
}
