package tests

import (
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// trayProc is a running `tether tray`.
type trayProc struct {
	*deskProc
	pid int
}

// startTray runs `tether --profile P tray` on the desktop, with the
// world's files; bare leaves out "tray", as a desktop's launcher would run
// a bare `tether`.
func (d *desktop) startTray(w *world, profile string, bare bool) *trayProc {
	d.t.Helper()
	args := []string{"--profile", profile}
	if !bare {
		args = append(args, "tray")
	}
	return d.startTrayArgs(w, args, nil)
}

// startTrayEnv is startTray (not bare) with more environment.
func (d *desktop) startTrayEnv(w *world, profile string, env ...string) *trayProc {
	d.t.Helper()
	return d.startTrayArgs(w, []string{"--profile", profile, "tray"}, env)
}

func (d *desktop) startTrayArgs(w *world, args, extra []string) *trayProc {
	d.t.Helper()
	cmd := exec.Command(tether, args...)
	// The desktop's environment, with the world's XDG directories.
	env := append(withoutXDG(w.env), d.env...)
	for _, kv := range w.env {
		if strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	p := d.startCmd(fmt.Sprintf("tray-%d", time.Now().UnixNano()), cmd, append(env, extra...))
	return &trayProc{deskProc: p, pid: cmd.Process.Pid}
}

func withoutXDG(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "XDG_") {
			out = append(out, kv)
		}
	}
	return out
}

// hasFreezer reports whether this machine can freeze a process (cgroup v1
// freezer, as root), the one way to make a cleanup fail for real.
func hasFreezer() bool {
	if os.Geteuid() != 0 {
		return false
	}
	_, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs"))
	return err == nil
}

// TestTrayOnARealDesktop drives the tray as a user would, through a real
// tray host: the Xfce panel's Status Tray finds it on the session bus,
// reads its menu with dbusmenu and clicks its items; dunst shows its
// notifications.
func TestTrayOnARealDesktop(t *testing.T) {
	d := newDesktop(t, true)
	notes := d.monitorNotify()
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: alice
    identity: alice@relay
    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]
    autostart: true
    stop_timeout: 300ms
  - id: bob
    command: [/nonexistent/tether-e2e-agent, %s]
    autostart: true
`, m, m))
	var fz *freezer
	if hasFreezer() {
		fz = newFreezer(t)
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: no cgroup v1 freezer as root here: the cleanup-failure notification cannot be tested")
	}
	svc := w.startService("default")
	if fz != nil {
		// Runs before the service's cleanup, whose stop could never end
		// with a frozen member.
		t.Cleanup(func() { _ = fz.write("freezer.state", "THAWED") })
	}
	alice := w.waitState("default", "alice", api.StateRunning)
	w.waitState("default", "bob", api.StateFailed)

	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	t.Logf("tray pid %d registered as %s%s, menu %s", tr.pid, item.service, item.path, item.menu)

	// bob's start failed: a notification says what happened and what to do.
	n := d.waitNotification(15*time.Second, "bob failed", string(api.CodeSpawn))
	t.Logf("start failure notified: %q", n)

	// First, as the host is the first to read the menu: a screenshot of
	// the panel with the menu open, the failed agent's submenu too, kept
	// at $TETHER_TRAY_SCREENSHOT when set (docs/tray.png is one, cropped).
	// (fyne.io/systray answers the first GetLayout one level deep, for
	// libdbusmenu's sake, which then shows every submenu; a test reading
	// the menu before the host would leave the host's submenus blank.)
	shot := d.openMenuScreenshot()
	path := filepath.Join(t.TempDir(), "tray.png")
	if p := os.Getenv("TETHER_TRAY_SCREENSHOT"); p != "" {
		path = p
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the open menu: %s", path)

	// The menu: the aggregate first, then one submenu per agent, with
	// what makes no sense disabled; the icon says something failed.
	menu := d.waitMenu(item, `"1 running, 1 failed" and the agents' actions`, func(n menuNode) bool {
		first := len(n.children) > 0 && n.children[0].label == "1 running, 1 failed"
		_, ok := n.find("alice: running", "Stop")
		_, ok2 := n.find("bob: failed", "Start")
		return first && ok && ok2
	})
	t.Logf("the menu:%s", menu)
	for _, c := range []struct {
		path    []string
		enabled bool
	}{
		{[]string{"alice: running", "Start"}, false},
		{[]string{"alice: running", "Stop"}, true},
		{[]string{"alice: running", "Restart"}, true},
		{[]string{"alice: running", "Open log"}, true},
		{[]string{"alice: running", "no errors"}, false},
		{[]string{"bob: failed", "Start"}, true},
		{[]string{"bob: failed", "Stop"}, true},
		{[]string{"bob: failed", "error at "}, false},
		{[]string{"Start all"}, true},
		{[]string{"Stop all"}, true},
		{[]string{"Open config"}, true},
		{[]string{"Start at login"}, true},
		{[]string{"Quit tray"}, true},
	} {
		if n, ok := menu.find(c.path...); !ok || n.enabled != c.enabled {
			t.Errorf("%v: found %v, enabled %v; want enabled %v:%s", c.path, ok, n.enabled, c.enabled, menu)
		}
	}
	if line, _ := menu.find("bob: failed", "error at "); !strings.Contains(line.label, ": spawn: ") {
		t.Errorf("bob's error line %q does not show the spawn error", line.label)
	}
	// The host opened the menu for the screenshot: the tray asked the
	// service what alice costs, and her submenu says it.
	d.waitMenu(item, "alice's cost in her submenu", func(n menuNode) bool {
		line, ok := n.find("alice: running", "identity ")
		return ok && strings.Contains(line.label, " CPU, ")
	})
	d.waitIcon(item, "red")

	// Stop and Start through the menu.
	stop, _ := menu.find("alice: running", "Stop")
	d.click(item, stop.id)
	w.waitState("default", "alice", api.StateStopped)
	menu = d.waitMenu(item, "alice stopped", func(n menuNode) bool {
		s, ok := n.find("alice: stopped", "Start")
		return ok && s.enabled && len(n.children) > 0 && n.children[0].label == "1 stopped, 1 failed"
	})
	start, _ := menu.find("alice: stopped", "Start")
	d.click(item, start.id)
	alice = w.waitState("default", "alice", api.StateRunning)
	d.waitMenu(item, "alice running again", func(n menuNode) bool {
		_, ok := n.find("alice: running", "Stop")
		return ok
	})
	t.Logf("stopped and started through the menu; agent pid %d", alice.PID)

	// SIGKILL the tray: the agents do not notice. A new tray (a bare
	// `tether` on a desktop) registers again.
	if err := tr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-tr.done
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		return !slices.ContainsFunc(d.items(), func(it sniItem) bool { return it.service == item.service })
	}) {
		t.Fatalf("the killed tray's item is still registered: %+v", d.items())
	}
	after := w.status("default")["alice"]
	if after.State != api.StateRunning || after.PID != alice.PID || after.GuardianPID != alice.GuardianPID || !after.Since.Equal(alice.Since) {
		t.Fatalf("after the tray's SIGKILL alice is %+v, was %+v", after, alice)
	}
	if err := unix.Kill(alice.PID, 0); err != nil {
		t.Fatalf("the agent %d is gone after the tray's SIGKILL: %v", alice.PID, err)
	}
	tr = d.startTray(w, "default", true)
	item = d.waitItem(tr.pid, 15*time.Second)
	menu = d.waitMenu(item, "alice running", func(n menuNode) bool {
		_, ok := n.find("alice: running", "Stop")
		return ok
	})
	t.Logf("the tray was SIGKILLed, alice ran on; a bare tether registered again as %s", item.service)

	// Start at login, where no per-user service manager can be reached
	// (this build machine): the tray's autostart entry is the whole of
	// it (its tray starts the service), so the box turns on; off again,
	// the entry goes and nothing stops.
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Log("not clicking Start at login: systemd is init here, and the switch would talk to the real user manager")
	} else {
		entry := filepath.Join(w.dir, "config", "autostart", "tether.desktop")
		for _, on := range []bool{true, false} {
			menu = d.waitMenu(item, "Start at login enabled (the registrations read)", func(n menuNode) bool {
				l, ok := n.find("Start at login")
				return ok && l.enabled
			})
			login, _ := menu.find("Start at login")
			d.click(item, login.id)
			want := map[bool]int32{true: 1, false: 0}[on]
			menu = d.waitMenu(item, fmt.Sprintf("Start at login %v", on), func(n menuNode) bool {
				l, ok := n.find("Start at login")
				return ok && l.enabled && l.toggle == want
			})
			b, err := os.ReadFile(entry)
			switch {
			case on && (err != nil || !strings.Contains(string(b), "tray --at-login")):
				t.Errorf("Start at login on: the autostart entry %s: %v\n%s", entry, err, b)
			case !on && err == nil:
				t.Errorf("Start at login off: %s is still there", entry)
			}
		}
		if got := w.status("default")["alice"]; got.State != api.StateRunning {
			t.Errorf("alice after Start at login on and off: %+v", got)
		}
	}

	// A cleanup that fails for real: alice's child is frozen, so it
	// cannot die, and Stop is clicked in the menu.
	if fz == nil {
		t.Log("no cgroup v1 freezer as root here: not testing the cleanup-failure notification")
	} else {
		child := childOf(t, alice.PID)
		fz.freeze(child)
		stop, _ := menu.find("alice: running", "Stop")
		d.click(item, stop.id)
		w.waitState("default", "alice", api.StateCleanupFailed)
		// A frozen process is in state D: it has had SIGKILL, and
		// the notice says it is stuck in the kernel and how to find
		// why, not to kill it again.
		n := d.waitNotification(15*time.Second, "alice would not stop", fmt.Sprint(child), "stuck in the kernel", "freezer")
		if strings.Contains(n, "kill -9") {
			t.Errorf("kill -9 advice for a process in state D: %q", n)
		}
		t.Logf("cleanup failure notified: %q", n)
		// Critical: it stays until dismissed.
		if c := notes.wait(t, time.Second, "alice would not stop"); c.urgency != 2 || c.expire != 0 {
			t.Errorf("the cleanup failure's notice has urgency %d and expiry %d, want critical (2), never (0)", c.urgency, c.expire)
		}
		d.waitMenu(item, "the cleanup error in the menu, with the surviving pid", func(n menuNode) bool {
			sub, ok := n.find("alice: cleanup failed")
			info, ok2 := n.find("alice: cleanup failed", "identity ")
			return ok && ok2 && n.children[0].label == "1 failed, 1 cleanup failed" && len(sub.children) > 0 &&
				strings.Contains(sub.children[len(sub.children)-1].label, "cleanup_failed: ") &&
				strings.HasSuffix(info.label, fmt.Sprintf("still alive: pid %d", child))
		})
		fz.thaw()
		w.waitState("default", "alice", api.StateStopped)
		// The error stays in the submenu until a newer one replaces it.
		d.waitMenu(item, "alice stopped, the cleanup error kept", func(n menuNode) bool {
			sub, ok := n.find("alice: stopped")
			return ok && len(sub.children) > 0 && strings.Contains(sub.children[len(sub.children)-1].label, "cleanup_failed: ")
		})
	}

	// The service goes away: the tray says so, and its Start service
	// starts one that is not the tray's child to keep.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.client("default").Quit(ctx); err != nil {
		t.Fatalf("quitting the service: %v", err)
	}
	<-svc.done
	// The host applies the menu's changes one item at a time: the head
	// and Start service may come in separate updates.
	menu = d.waitMenu(item, `"service not running" and an enabled Start service`, func(n menuNode) bool {
		s, ok := n.find("Start service")
		return len(n.children) > 0 && n.children[0].label == "service not running" && ok && s.enabled
	})
	n = d.waitNotification(15*time.Second, "service stopped", "Start service")
	t.Logf("service lost: %q", n)
	startSvc, _ := menu.find("Start service")
	d.click(item, startSvc.id)
	var st api.Status
	var err error
	if !testproc.UntilEvery(20*time.Second, 10*time.Millisecond, func() bool {
		st, err = w.client("default").Status(ctx)
		return err == nil
	}) {
		t.Fatalf("no service after Start service: %v\ntray: %s", err, tr.output())
	}
	t.Cleanup(func() { quitDetached(t, w, st.ServicePID) })
	p, err := punix.Stat(st.ServicePID)
	if err != nil || p.PPid != tr.pid || p.Sid != st.ServicePID {
		t.Errorf("the started service %d: %+v, %v; want a child of the tray %d in a session of its own", st.ServicePID, p, err, tr.pid)
	}
	menu = d.waitMenu(item, "connected again", func(n menuNode) bool {
		_, ok := n.find("alice: ", "Open log")
		return ok
	})

	// Quit tray: the tray ends, the service it started runs on.
	quit, _ := menu.find("Quit tray")
	d.clickQuit(item, quit.id)
	select {
	case <-tr.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the tray did not quit:\n%s", tr.output())
	}
	if code := tr.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("Quit tray: exit %d\n%s", code, tr.output())
	}
	if _, err := w.client("default").Status(ctx); err != nil {
		t.Errorf("the service the tray started did not outlive it: %v", err)
	}
	if out := tr.output(); strings.Contains(out, "panic") {
		t.Errorf("the tray panicked:\n%s", out)
	}
}

// childOf waits for a child of pid and returns it.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	child := 0
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		procs, _ := punix.Processes()
		for _, p := range procs {
			if p.PPid == pid && !p.Zombie() {
				child = p.Pid
				return true
			}
		}
		return false
	}) {
		t.Fatalf("process %d never started a child", pid)
	}
	return child
}

// quitDetached stops a service that the tray started, and reaps it once
// this process has adopted it.
func quitDetached(t *testing.T, w *world, pid int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.client("default").Quit(ctx); err != nil && !errors.Is(err, client.ErrNotRunning) {
		t.Errorf("quitting the service the tray started: %v", err)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if !testproc.UntilEvery(20*time.Second, 5*time.Millisecond, func() bool {
		p, err := punix.Stat(pid)
		if err != nil {
			return true
		}
		if p.Zombie() && p.PPid == os.Getpid() {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		}
		return p.Zombie() // if not ours, the tray's to reap
	}) {
		t.Errorf("the service %d the tray started never ended", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// openMenuScreenshot clicks the tray's icon, opens the second agent's
// submenu with the keyboard, and returns a screenshot; then closes the
// menu again.
func (d *desktop) openMenuScreenshot() []byte {
	d.t.Helper()
	left, top := d.openMenu(func(img image.Image, _, _ int) bool { return true })
	// Down selects the first enabled item: the first agent, a failed one
	// (they come first); Right opens its submenu, to the left of the menu.
	d.run(10*time.Second, "xdotool", "key", "Down", "Right")
	shot := d.waitScreen("the submenu", func(img image.Image) bool {
		return light(img, left-30, top+100) && light(img, left-30, top+150)
	})
	d.closeMenu(top)
	return shot
}

// openMenu clicks the tray icon and waits until the menu is open and ok
// accepts it; it returns the menu's left edge and the y of its top
// padding.
func (d *desktop) openMenu(ok func(img image.Image, left, top int) bool) (left, top int) {
	d.t.Helper()
	// No notification over the menu.
	d.run(10*time.Second, "dunstctl", "close-all")
	// The lone item sits at the right end of the panel.
	x, y := deskWidth-panelSize/2-1, panelSize/2
	// Coloured (not grey): the tray shows the agents' state.
	d.waitScreen("the tray icon", func(img image.Image) bool {
		for dx := -8; dx <= 8; dx++ {
			if vivid(img, x+dx, y) {
				return true
			}
		}
		return false
	})
	d.run(10*time.Second, "xdotool", "mousemove", fmt.Sprint(x), fmt.Sprint(y), "click", "1")
	// The menu drops below the panel, at the right edge. Its left edge is
	// found along its top padding, above the first item's text.
	top = panelSize + 4
	d.waitScreen("the menu", func(img image.Image) bool {
		if !light(img, deskWidth-40, top) {
			return false
		}
		for left = deskWidth - 40; left > 0 && light(img, left-1, top); left-- {
		}
		// The whole menu, not a sliver of it.
		return left < deskWidth-120 && ok(img, left, top)
	})
	return left, top
}

// closeMenu closes an open menu (and submenu) and waits until it is gone.
func (d *desktop) closeMenu(top int) {
	d.t.Helper()
	d.run(10*time.Second, "xdotool", "key", "Escape", "Escape")
	d.waitScreen("the menu closed", func(img image.Image) bool { return !light(img, deskWidth-40, top) })
}

// A reload that adds more agents than the menu has room for makes the tray
// build a new menu; the real host shows all of it, down to the last new
// agent's submenu (fyne.io/systray cannot add submenus in place, and a
// host may keep showing a menu it fetched before).
func TestTrayGrowsOnReload(t *testing.T) {
	d := newDesktop(t, true)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	agents := func(n int) string {
		var b strings.Builder
		b.WriteString("agents:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - id: a%02d\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n    stop_timeout: 300ms\n", i, m)
		}
		return b.String()
	}
	w.writeConfig(agents(2))
	w.startService("default")
	w.waitState("default", "a01", api.StateRunning)
	tr := d.startTray(w, "default", false)
	d.waitItem(tr.pid, 15*time.Second)
	// The host's first look, at a menu of two agents.
	_, top := d.openMenu(func(image.Image, int, int) bool { return true })
	d.closeMenu(top)

	const n = 12
	w.writeConfig(agents(n))
	w.mustRun("reload")
	w.waitState("default", fmt.Sprintf("a%02d", n-1), api.StateRunning)
	// One row per agent, 25 pixels each, under the aggregate line: the
	// menu reaches below the last agent once it holds all twelve.
	const row = 25
	lastAgent := top + row*(n+1)
	left, _ := d.openMenu(func(img image.Image, _, top int) bool {
		return light(img, deskWidth-40, lastAgent+5*row)
	})
	// Down n times selects the last agent; Right opens its submenu, to
	// the left of the menu, level with it and six rows deep.
	keys := []string{"xdotool", "key"}
	for range n {
		keys = append(keys, "Down")
	}
	d.run(10*time.Second, append(keys, "Right")...)
	submenu := func(img image.Image) bool {
		return light(img, left-30, lastAgent) && light(img, left-30, lastAgent+4*row)
	}
	// The panel sometimes opens a submenu whose items it has not built
	// yet, and draws it empty ("children but no menu"); closing and
	// opening it again builds it.
	for range 2 {
		if testproc.UntilEvery(5*time.Second, 50*time.Millisecond, func() bool { img, _ := d.screenshot(); return submenu(img) }) {
			break
		}
		d.run(10*time.Second, "xdotool", "key", "Left", "Right")
	}
	shot := d.waitScreen("the last agent's submenu", submenu)
	d.closeMenu(top)
	path := filepath.Join(t.TempDir(), "tray-grown.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the grown menu with the last agent's submenu open: %s", path)
}

// The tray on a session bus with no tray host (GNOME without the
// AppIndicator extension) does not exit: it says once, in a notification,
// how to get a tray, waits for one by watching the bus (it sleeps
// meanwhile, it does not poll), and shows its icon as soon as a panel
// with a tray appears.
func TestTrayWithoutHost(t *testing.T) {
	d := newDesktopWith(t, deskOptions{notifier: "dunst"})
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf("agents:\n  - id: alice\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    autostart: true\n", m))
	w.startService("default")
	w.waitState("default", "alice", api.StateRunning)
	begin := time.Now()
	tr := d.startTray(w, "default", false)
	n := d.waitNotification(30*time.Second, "no tray to show its icon in", "AppIndicator")
	t.Logf("after %v: %q", time.Since(begin).Round(time.Millisecond), n)
	if !tr.running() {
		t.Fatalf("the tray exited:\n%s", tr.output())
	}
	const idle = 5 * time.Second
	woke := wakesIn(t, tr.pid, idle)
	t.Logf("waiting for a tray host, the tray woke %d times in %v", woke, idle)
	if woke != 0 {
		t.Errorf("the tray woke %d times in %v while waiting for a tray host: it polls", woke, idle)
	}

	d.startPanel()
	item := d.waitItem(tr.pid, 15*time.Second)
	d.waitMenu(item, "alice running", func(n menuNode) bool { _, ok := n.find("alice: running"); return ok })
	var told int
	for _, n := range d.notifications() {
		if strings.Contains(n, "no tray to show its icon in") {
			told++
		}
	}
	if told != 1 {
		t.Errorf("told %d times that there is no tray, want once", told)
	}
	if out := tr.output(); !strings.Contains(out, "no system tray host yet") || strings.Contains(out, "panic") {
		t.Errorf("the tray's output:\n%s", out)
	}
}

// Without a session bus, `tether tray` and a bare `tether` on a desktop
// exit 1 with a clear message, never a panic, and never start a bus.
func TestTrayWithoutSessionBus(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		name string
		args []string
		env  []string
	}{
		{"tray, no bus variable", []string{"tray"}, []string{"DBUS_SESSION_BUS_ADDRESS="}},
		{"tray, a bus that is not there", []string{"tray"}, []string{"DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(w.dir, "nobus")}},
		{"bare tether with DISPLAY", nil, []string{"DISPLAY=:99", "DBUS_SESSION_BUS_ADDRESS=unix:path=" + filepath.Join(w.dir, "nobus")}},
		{"bare tether with WAYLAND_DISPLAY", nil, []string{"WAYLAND_DISPLAY=wayland-9", "DBUS_SESSION_BUS_ADDRESS="}},
	} {
		cmd := exec.Command(tether, c.args...)
		cmd.Env = append(append([]string(nil), w.env...), c.env...)
		_, stderr, err := runBounded(t, cmd, 30*time.Second)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, "tether tray: no D-Bus session bus") || strings.Contains(stderr, "panic") {
			t.Errorf("%s: %v\n%s", c.name, err, stderr)
		}
	}
	r := w.run(10*time.Second, "tray", "extra")
	if r.code != 2 || !strings.Contains(r.stderr, "takes no arguments") {
		t.Errorf("tray extra: exit %d\n%s", r.code, r.stderr)
	}
}

// One tray per profile and display: a second tray of the profile says
// which one runs and exits 0, registering no second icon; a tray of
// another profile runs beside it; once the first quits, a new one starts.
func TestOneTrayPerProfile(t *testing.T) {
	d := newDesktop(t, true)
	w := newWorld(t)
	first := d.startTray(w, "default", false)
	d.waitItem(first.pid, 15*time.Second)

	second := d.startTray(w, "default", false)
	select {
	case <-second.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("a second tray of the profile still runs after 15 s:\n%s", second.output())
	}
	if code := second.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the second tray exited %d, want 0:\n%s", code, second.output())
	}
	if out := second.output(); !strings.Contains(out, fmt.Sprintf("already runs on this display (pid %d)", first.pid)) {
		t.Errorf("the second tray does not name the first:\n%s", out)
	}
	if n := len(d.items()); n != 1 {
		t.Errorf("%d tray items registered, want 1: %+v", n, d.items())
	}

	work := d.startTray(w, "work", false)
	d.waitItem(work.pid, 15*time.Second)

	first.stop(10 * time.Second)
	again := d.startTray(w, "default", false)
	d.waitItem(again.pid, 15*time.Second)
}

// The green badge says that something runs: a service whose agents are
// all stopped shows the plain mark, and the badge turns green when an
// agent starts and goes again when it stops.
func TestTrayGreenOnlyWhenSomethingRuns(t *testing.T) {
	d := newDesktop(t, true)
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf("agents:\n  - id: alice\n    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]\n    stop_timeout: 300ms\n", m))
	w.startService("default")
	w.waitState("default", "alice", api.StateStopped)
	tr := d.startTray(w, "default", false)
	item := d.waitItem(tr.pid, 15*time.Second)
	// Connected (the menu shows the agent), and no badge: the plain
	// mark, whose grey the badge's place shows.
	d.waitMenu(item, "alice stopped", func(n menuNode) bool { _, ok := n.find("alice: stopped"); return ok })
	d.waitIcon(item, "grey")
	if r := w.run(30*time.Second, "start", "alice"); r.code != 0 {
		t.Fatalf("start alice: exit %d\n%s", r.code, r.stderr)
	}
	d.waitIcon(item, "green")
	if r := w.run(30*time.Second, "stop", "alice"); r.code != 0 {
		t.Fatalf("stop alice: exit %d\n%s", r.code, r.stderr)
	}
	d.waitIcon(item, "grey")
}
