package tests

import (
	"context"
	"errors"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// trayProc is a running `tether tray`.
type trayProc struct {
	*deskProc
	pid int
}

// startTray runs the tray of profile on the desktop, with the world's
// directories; args replace the default ["tray"].
func (d *desktop) startTray(w *world, profile string, args ...string) *trayProc {
	d.t.Helper()
	if len(args) == 0 {
		args = []string{"tray"}
	}
	cmd := exec.Command(tether, append([]string{"--profile", profile}, args...)...)
	// The world's environment, then the desktop's (which wins for XDG_*:
	// the tray's files are the world's, so the world's are put last).
	env := append([]string(nil), d.env...)
	for _, kv := range w.env {
		if strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	p := d.startCmd(fmt.Sprintf("tray-%d", time.Now().UnixNano()), cmd, append(withoutXDG(w.env), env...))
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
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig(fmt.Sprintf(`agents:
  - id: alice
    identity: alice@relay
    command: [/bin/sh, -c, 'sleep 1000 & wait', %s]
    autostart: true
    stop_timeout: 300ms
`, m))
	freeze := hasFreezer()
	var fz *freezer
	if freeze {
		fz = newFreezer(t)
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: no cgroup v1 freezer as root here: the cleanup-failure notification cannot be tested")
	}
	w.startService("default")
	if fz != nil {
		// Runs before the service's cleanup, whose stop could never end
		// with a frozen member.
		t.Cleanup(func() { _ = fz.write("freezer.state", "THAWED") })
	}
	alice := w.waitState("default", "alice", "running")

	tr := d.startTray(w, "default")
	item := d.waitItem(tr.pid, 15*time.Second)
	t.Logf("tray pid %d registered as %s%s, menu %s", tr.pid, item.service, item.path, item.menu)

	// The menu: the aggregate first, then one submenu per agent.
	menu := d.waitMenu(item, `"1 running" and alice's actions`, func(n menuNode) bool {
		first := len(n.children) > 0 && n.children[0].label == "1 running"
		_, ok := n.find("alice: running", "Stop")
		return first && ok
	})
	for _, c := range []struct {
		path    []string
		enabled bool
	}{
		{[]string{"alice: running", "Start"}, false},
		{[]string{"alice: running", "Stop"}, true},
		{[]string{"alice: running", "Restart"}, true},
		{[]string{"alice: running", "Open log"}, true},
		{[]string{"Start all"}, false},
		{[]string{"Stop all"}, true},
		{[]string{"Open config"}, true},
		{[]string{"Start at login"}, true},
		{[]string{"Quit tray"}, true},
	} {
		if n, ok := menu.find(c.path...); !ok || n.enabled != c.enabled {
			t.Errorf("%v: found %v, enabled %v; want enabled %v:%s", c.path, ok, n.enabled, c.enabled, menu)
		}
	}
	if n, _ := menu.find("alice: running", "no errors"); n.enabled {
		t.Errorf("the error line is clickable:%s", menu)
	}

	// Stop and Start through the menu.
	stop, _ := menu.find("alice: running", "Stop")
	d.click(item, stop.id)
	w.waitState("default", "alice", "stopped")
	menu = d.waitMenu(item, "alice stopped", func(n menuNode) bool {
		s, ok := n.find("alice: stopped", "Start")
		return ok && s.enabled && len(n.children) > 0 && n.children[0].label == "1 stopped"
	})
	start, _ := menu.find("alice: stopped", "Start")
	d.click(item, start.id)
	alice = w.waitState("default", "alice", "running")
	menu = d.waitMenu(item, "alice running again", func(n menuNode) bool {
		_, ok := n.find("alice: running", "Stop")
		return ok
	})
	t.Logf("stopped and started through the menu; agent pid %d", alice.PID)

	// A screenshot of the panel with the menu open, alice's submenu too.
	shot := d.openMenuScreenshot()
	path := filepath.Join(t.TempDir(), "tray.png")
	if p := os.Getenv("TETHER_TRAY_SCREENSHOT"); p != "" {
		path = p
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the open menu: %s", path)

	// SIGKILL the tray: the agents do not notice. A new tray (a bare
	// `tether` on a desktop) registers again.
	if err := tr.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-tr.done
	deadline := time.Now().Add(10 * time.Second)
	for gone := false; !gone; {
		gone = true
		for _, it := range d.items() {
			gone = gone && it.service != item.service
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed tray's item is still registered: %+v", d.items())
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := w.status("default")["alice"]
	if after.State != "running" || after.PID != alice.PID || after.GuardianPID != alice.GuardianPID || !after.Since.Equal(alice.Since) {
		t.Fatalf("after the tray's SIGKILL alice is %+v, was %+v", after, alice)
	}
	if err := unix.Kill(alice.PID, 0); err != nil {
		t.Fatalf("the agent %d is gone after the tray's SIGKILL: %v", alice.PID, err)
	}
	tr = d.startTray(w, "default", []string{}...)
	tr.cmd.Args = nil // (already started; for the log only)
	bare := d.startTray(w, "default", "--config", w.configPath())
	_ = bare
	t.Fatal("unreachable")
}

// openMenuScreenshot clicks the tray's icon, opens the first agent's
// submenu with the keyboard, and returns a screenshot; then closes the
// menu again.
func (d *desktop) openMenuScreenshot() []byte {
	d.t.Helper()
	// The lone item sits at the right end of the panel.
	x, y := deskWidth-panelSize/2-1, panelSize/2
	d.waitScreen("the tray icon", func(img image.Image) bool { return vivid(img, x, y) })
	d.run(10*time.Second, "xdotool", "mousemove", fmt.Sprint(x), fmt.Sprint(y), "click", "1")
	// The menu drops below the panel, at the right edge.
	row := panelSize + 12
	var left int
	d.waitScreen("the menu", func(img image.Image) bool {
		if !light(img, deskWidth-40, row) {
			return false
		}
		for left = deskWidth - 40; left > 0 && light(img, left-1, row); left-- {
		}
		return true
	})
	// Down selects the first enabled item (the first agent), Right opens
	// its submenu, which opens to the left of the menu.
	d.run(10*time.Second, "xdotool", "key", "Down", "Right")
	shot := d.waitScreen("the submenu", func(img image.Image) bool {
		return light(img, left-30, row+40)
	})
	d.run(10*time.Second, "xdotool", "key", "Escape", "Escape")
	d.waitScreen("the menu closed", func(img image.Image) bool { return !light(img, deskWidth-60, panelSize+12) })
	return shot
}

// The tray on a session bus with no tray host exits 1 and says so.
func TestTrayWithoutHost(t *testing.T) {
	d := newDesktop(t, false)
	w := newWorld(t)
	begin := time.Now()
	cmd := exec.Command(tether, "tray")
	cmd.Env = append(withoutXDG(w.env), d.env...)
	_, stderr, err := runBounded(t, cmd, 30*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, "no system tray host") || !strings.Contains(stderr, "org.kde.StatusNotifierWatcher") {
		t.Fatalf("tray without a host: %v\n%s", err, stderr)
	}
	if strings.Contains(stderr, "panic") {
		t.Fatalf("the tray panicked:\n%s", stderr)
	}
	t.Logf("after %v: %s", time.Since(begin).Round(time.Millisecond), strings.TrimSpace(stderr))
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

// unused keeps imports while the test is written.
var _ = []any{context.Background, punix.Stat, syscall.SIGKILL}
