package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// The tray at login on a systemd desktop session (KDE Plasma's systemd
// startup, sway and other systemd sessions): the session's own target
// pulls in xdg-desktop-autostart.target, whose units
// systemd-xdg-autostart-generator made of the autostart entries, and the
// user manager starts them with the session's environment.

// sessionTarget stands for a session manager's target (such as
// plasma-workspace.target): xdg-desktop-autostart.target refuses to be
// started by hand, a target that wants it does not.
const sessionTarget = "tether-test-session.target"

const sessionTargetUnit = `[Unit]
Description=A desktop session's startup, as a systemd session runs it
Wants=xdg-desktop-autostart.target
`

// sessionDesktop is the session's XDG_CURRENT_DESKTOP, which the
// generated unit checks an entry's OnlyShowIn and NotShowIn against at
// start (the panel of the session is Xfce's).
const sessionDesktop = "XFCE"

// trayAtLoginUnit is the unit the generator makes of
// ~/.config/autostart/tether.desktop.
const trayAtLoginUnit = "app-tether@autostart.service"

// loginSession is a desktop session of a loginRig's user: the rig's user
// manager and a desktop (X server and Xfce panel, the tray host) on the
// manager's session bus.
type loginSession struct {
	r *loginRig
	d *desktop
}

// newLoginSession starts the desktop, writes the session's target and
// gives the manager the session's environment, as a session does
// (dbus-update-activation-environment --systemd): the units it starts
// from then on get the display.
func newLoginSession(r *loginRig) *loginSession {
	r.t.Helper()
	d := newDesktopWith(r.t, deskOptions{panel: true, user: r.m})
	dir := filepath.Join(r.m.Home, ".config", "systemd", "user")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sessionTarget), []byte(sessionTargetUnit), 0o644); err != nil {
		r.t.Fatal(err)
	}
	if err := chownAll(filepath.Join(r.m.Home, ".config"), r.m.UID, r.m.GID); err != nil {
		r.t.Fatal(err)
	}
	if out, err := r.m.Systemctl("set-environment", "DISPLAY="+d.display, "XDG_CURRENT_DESKTOP="+sessionDesktop, "XDG_SESSION_TYPE=x11"); err != nil {
		r.t.Fatalf("systemctl --user set-environment: %v: %s", err, out)
	}
	return &loginSession{r: r, d: d}
}

// entry is the path of the tray's autostart entry.
func (s *loginSession) entry() string {
	return filepath.Join(s.r.m.Home, ".config", "autostart", "tether.desktop")
}

// writeEntry replaces the tray's autostart entry, as the user's.
func (s *loginSession) writeEntry(content string) {
	s.r.t.Helper()
	if err := os.WriteFile(s.entry(), []byte(content), 0o644); err != nil {
		s.r.t.Fatal(err)
	}
	if err := os.Chown(s.entry(), s.r.m.UID, s.r.m.GID); err != nil {
		s.r.t.Fatal(err)
	}
}

// login starts the session as a login would: the tray of a previous
// session is stopped, the manager runs its generators again (as it does
// when it starts) and the session's target is started. It returns the
// pid of the tray once the tray host has registered its item, or an
// error saying why no tray came: no unit (the generator skipped the
// entry), a unit that failed or ended, or no item within 30 s.
func (s *loginSession) login() (int, error) {
	m := s.r.m
	_, _ = m.Systemctl("stop", sessionTarget, trayAtLoginUnit)
	_, _ = m.Systemctl("reset-failed", trayAtLoginUnit)
	if out, err := m.Systemctl("daemon-reload"); err != nil {
		return 0, fmt.Errorf("systemctl --user daemon-reload: %v: %s", err, out)
	}
	if out, err := m.Systemctl("start", sessionTarget); err != nil {
		return 0, fmt.Errorf("systemctl --user start %s: %v: %s", sessionTarget, err, out)
	}
	var failure error
	pid := 0
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		p := s.unitProps("LoadState", "ActiveState", "SubState", "MainPID")
		if p["LoadState"] != "loaded" {
			failure = fmt.Errorf("no unit %s (LoadState=%s): the generator made none of the entry", trayAtLoginUnit, p["LoadState"])
			return true
		}
		switch p["ActiveState"] {
		case "failed", "inactive":
			status, _ := m.Systemctl("status", "--no-pager", "-l", trayAtLoginUnit)
			failure = fmt.Errorf("%s is %s/%s:\n%s", trayAtLoginUnit, p["ActiveState"], p["SubState"], status)
			return true
		case "active":
			pid, _ = strconv.Atoi(p["MainPID"])
			_, ok := s.d.itemOf(pid)
			return pid > 0 && ok
		}
		return false
	}) {
		return 0, fmt.Errorf("no tray item of %s's pid %s registered within 30 s; registered: %+v", trayAtLoginUnit, s.unitProps("MainPID")["MainPID"], s.d.items())
	}
	if failure != nil {
		return 0, failure
	}
	return pid, nil
}

// unitProps are properties of the tray's generated unit.
func (s *loginSession) unitProps(names ...string) map[string]string {
	out, _ := s.r.m.Systemctl("show", "-p", strings.Join(names, ","), trayAtLoginUnit)
	props := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			props[k] = v
		}
	}
	return props
}

// trayStartsAtLogin turns "Start at login" on as the tray's menu does
// (tether tray --set-login=on), as the user, with the rig's tether; then
// a login starts the tray from its autostart entry through the
// generator, running the rig's tether, and the tray joins the panel's
// tray. An entry with GNOME's startup phase, one that is hidden, one
// that OnlyShowIn or NotShowIn keep out of the session's desktop and one
// whose Exec is not the tray's start no tray: the check can fail.
func trayStartsAtLogin(t *testing.T, r *loginRig) {
	s := newLoginSession(r)
	r.must(false, "tray", "--set-login=on")
	b, err := os.ReadFile(s.entry())
	if err != nil {
		t.Fatalf("Start at login wrote no autostart entry: %v", err)
	}
	entry := string(b)
	exec := ""
	for _, line := range strings.Split(entry, "\n") {
		if v, ok := strings.CutPrefix(line, "Exec="); ok {
			exec = v
		}
	}
	if want := r.exe + " tray --at-login"; exec != want {
		t.Errorf("the entry's Exec=%s, want %s", exec, want)
	}

	pid, err := s.login()
	if err != nil {
		t.Fatalf("the tray did not start at login: %v\nentry:\n%s\nmanager log:\n%s", err, entry, r.tail())
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || exe != r.exe {
		t.Errorf("the tray at login runs %q (%v), want %s", exe, err, r.exe)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	t.Logf("at login: %s (pid %d) registered with the panel's tray", strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "), pid)

	for _, c := range []struct{ name, entry string }{
		{"GNOME's startup phase", entry + "X-GNOME-Autostart-Phase=Applications\n"},
		{"Hidden=true", entry + "Hidden=true\n"},
		{"NotShowIn naming the session's desktop", entry + "NotShowIn=" + sessionDesktop + ";\n"},
		{"OnlyShowIn naming another desktop", entry + "OnlyShowIn=KDE;\n"},
		{"an Exec of no program", strings.Replace(entry, "Exec="+exec, "Exec="+r.exe+"-tray --at-login", 1)},
		{"an Exec that is not the tray", strings.Replace(entry, "Exec="+exec, "Exec="+r.exe+" tray --at-logon", 1)},
	} {
		s.writeEntry(c.entry)
		pid, err := s.login()
		if err == nil {
			t.Errorf("an entry with %s: the tray started at login all the same (pid %d)", c.name, pid)
			continue
		}
		t.Logf("an entry with %s starts no tray: %s", c.name, strings.SplitN(err.Error(), "\n", 2)[0])
	}
}

// The tray at login, with the tether of a user's own (~/bin/tether).
// TestPackageTrayStartsAtLogin does the same with the package's.
func TestTrayStartsAtLoginUnderSystemd(t *testing.T) {
	needGenerator(t)
	trayStartsAtLogin(t, newLoginRig(t))
}

// xdgAutostartGenerator is systemd's XDG autostart generator (Debian's
// systemd ships it).
const xdgAutostartGenerator = "/usr/lib/systemd/user-generators/systemd-xdg-autostart-generator"

func needGenerator(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(xdgAutostartGenerator); err != nil {
		testproc.SkipOrFail(t, "no systemd XDG autostart generator: %v", err)
	}
}

// The tray's autostart entry alone (no login service: it was uninstalled
// and the entry written back) starts the agents at the next login, its
// tray starting the service: the tray's "Start at login" is ticked, and
// service status says that it starts at login. Without the entry it does
// not.
func TestTrayTickWithTheAutostartEntryAlone(t *testing.T) {
	r := newLoginRig(t)
	d := newDesktopWith(t, deskOptions{panel: true, user: r.m})
	s := &loginSession{r: r, d: d}
	r.must(true, "tray", "--set-login=on")
	entry, err := os.ReadFile(s.entry())
	if err != nil {
		t.Fatalf("Start at login wrote no autostart entry: %v", err)
	}
	r.must(true, "service", "uninstall")
	s.writeEntry(string(entry))
	if _, err := os.Stat(filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service")); !os.IsNotExist(err) {
		t.Fatalf("after uninstall the unit is still there: %v", err)
	}

	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, "not installed") || !strings.Contains(res.stdout, "; starts at login") {
		t.Errorf("service status with the autostart entry alone: %q, want not installed and that it starts at login", res.stdout)
	}
	tray := d.start("tray", d.env, r.exe, "tray")
	item := d.waitItem(tray.cmd.Process.Pid, 30*time.Second)
	d.waitMenu(item, "Start at login ticked", func(n menuNode) bool {
		l, ok := n.find("Start at login")
		return ok && l.toggle == 1
	})

	if err := os.Remove(s.entry()); err != nil {
		t.Fatal(err)
	}
	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, "; does not start at login") {
		t.Errorf("service status with no entry and no unit: %q, want that it does not start at login", res.stdout)
	}
}
