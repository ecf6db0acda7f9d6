package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/internal/usermanager"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// A throwaway desktop for the tray's end-to-end tests: an X server
// (Xvfb), a private session bus, an Xfce panel whose Status Tray plugin is
// the StatusNotifierItem host, and dunst for notifications. Everything
// runs with its own XDG directories and is stopped at the test's end.
//
// Geometry: the panel is configured below, at the top of a 1024x600
// screen, 32 px high, with the tray as its last plugin, so a lone tray
// item sits in the top right corner.
const (
	deskWidth  = 1024
	deskHeight = 600
	panelSize  = 32
)

// deskTools are the programs the desktop needs (Debian packages xvfb,
// dbus, xfce4-panel, dunst, xdotool, imagemagick).
var deskTools = []string{"Xvfb", "dbus-daemon", "xfce4-panel", "dunst", "dunstctl", "xdotool", "import"}

type desktop struct {
	t       *testing.T
	dir     string
	display string
	bus     string   // DBUS_SESSION_BUS_ADDRESS
	env     []string // what a program on this desktop gets, besides its own
	marker  string   // in the environment of everything started here
	conn    *dbus.Conn
	user    *usermanager.Manager // see deskOptions.user
}

// deskProc is a program the desktop started and waits for.
type deskProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func (p *deskProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, waits up to within, then SIGKILLs; it always waits.
func (p *deskProc) stop(within time.Duration) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(within):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *deskProc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

const panelXML = `<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-panel" version="1.0">
  <property name="configver" type="int" value="2"/>
  <property name="panels" type="array">
    <value type="int" value="1"/>
    <property name="panel-1" type="empty">
      <property name="position" type="string" value="p=6;x=0;y=0"/>
      <property name="length" type="uint" value="100"/>
      <property name="position-locked" type="bool" value="true"/>
      <property name="size" type="uint" value="32"/>
      <property name="icon-size" type="uint" value="24"/>
      <property name="plugin-ids" type="array">
        <value type="int" value="1"/>
        <value type="int" value="2"/>
      </property>
    </property>
  </property>
  <property name="plugins" type="empty">
    <property name="plugin-1" type="string" value="separator">
      <property name="expand" type="bool" value="true"/>
      <property name="style" type="uint" value="0"/>
    </property>
    <property name="plugin-2" type="string" value="systray">
      <property name="square-icons" type="bool" value="true"/>
    </property>
  </property>
</channel>
`

const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <standard_session_servicedirs/>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// dunstrc configures the desktop's dunst: bubbles stay until closed (the
// tests close them, and read the history), no age is added to them, and
// its context menu (dunstctl context) picks the action named in the file
// the desktop's pickAction writes, the way a user picks one in dmenu.
const dunstrc = `[global]
    show_age_threshold = -1
    dmenu = %s
[urgency_low]
    timeout = 0
[urgency_normal]
    timeout = 0
`

// dunstPicker is the context menu's "dmenu": it keeps the menu dunst
// offers, and answers with its first line that contains the pick.
const dunstPicker = `#!/bin/sh
cat > %[1]s/dunst-menu.txt
grep -m1 -F -e "$(cat %[1]s/dunst-pick)" %[1]s/dunst-menu.txt
`

// deskOptions say what a desktop has besides its X server and bus.
type deskOptions struct {
	panel    bool   // the Xfce panel, a tray host
	notifier string // "dunst", "xfce4-notifyd", or "" for none
	// user, where set, makes the desktop a login of a real systemd user
	// manager's user: the panel, the notifier and the programs run on
	// the desktop (command, run) run as that user, in the manager's
	// mount namespace, on the manager's session bus (the one its units
	// get), with the user's own XDG directories, as on a systemd login.
	// Only the X server is the test's. Its notifier can only be dunst,
	// whose context menu (pickAction) it does not offer.
	user *usermanager.Manager
}

// newDesktop starts the desktop; a missing program skips the test (fails
// it with CI=true). withPanel false leaves out the panel and dunst: a bus
// with no tray host.
func newDesktop(t *testing.T, withPanel bool) *desktop {
	t.Helper()
	if withPanel {
		return newDesktopWith(t, deskOptions{panel: true, notifier: "dunst"})
	}
	return newDesktopWith(t, deskOptions{})
}

// newDesktopWith starts a desktop with what o asks for.
func newDesktopWith(t *testing.T, o deskOptions) *desktop {
	t.Helper()
	needTools(t, deskTools...)
	if o.notifier == "xfce4-notifyd" {
		needTools(t, xfceNotifyd())
	}
	dir, err := os.MkdirTemp("", "ttd-") // short: it holds the bus socket
	if err != nil {
		t.Fatal(err)
	}
	d := &desktop{t: t, dir: dir, marker: uniqueMarker(), user: o.user}
	config := filepath.Join(dir, "config")
	if o.user != nil {
		if o.notifier != "" && o.notifier != "dunst" {
			t.Fatalf("a user's desktop takes dunst as its notifier, not %s", o.notifier)
		}
		config = filepath.Join(o.user.Home, ".config")
	}
	for _, sub := range []string{"cache", "data", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"xfce4/xfconf/xfce-perchannel-xml", "dunst"} {
		if err := os.MkdirAll(filepath.Join(config, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Registered first, so it runs last: whatever this desktop started
	// that is still there (programs the bus activated, the panel's plugin
	// processes) is killed and reaped, and the directory removed.
	t.Cleanup(func() {
		d.sweep()
		os.RemoveAll(dir)
	})
	d.env = []string{
		"TETHER_E2E_DESKTOP=" + d.marker,
		"NO_AT_BRIDGE=1", // no accessibility bus
		"GTK_A11Y=none",
	}
	if o.user != nil {
		d.env = append(o.user.Env(), d.env...)
	} else {
		d.env = append(d.env,
			"XDG_CONFIG_HOME="+config,
			"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
			"XDG_DATA_HOME="+filepath.Join(dir, "data"),
			"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	}
	if err := os.WriteFile(filepath.Join(config, "xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml"), []byte(panelXML), 0o600); err != nil {
		t.Fatal(err)
	}
	// The picker is the test's, in its directory: a user's dunst has
	// none to run.
	picker := filepath.Join(dir, "dunst-picker")
	if err := os.WriteFile(picker, []byte(fmt.Sprintf(dunstPicker, dir)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "dunst/dunstrc"), []byte(fmt.Sprintf(dunstrc, picker)), 0o600); err != nil {
		t.Fatal(err)
	}
	if o.user != nil {
		if err := chownAll(config, o.user.UID, o.user.GID); err != nil {
			t.Fatal(err)
		}
	}

	// Xvfb picks a free display and writes its number when it is ready.
	x := d.startWithFD("Xvfb", nil, "Xvfb", "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", deskWidth, deskHeight), "-nolisten", "tcp")
	d.display = ":" + x
	d.env = append(d.env, "DISPLAY="+d.display)

	if o.user != nil {
		d.bus = o.user.Bus()
		if d.conn, err = connectAs(o.user.UID, o.user.GID, o.user.HostPath(o.user.RunUserDir()+"/bus")); err != nil {
			t.Fatalf("connecting to the user's session bus: %v", err)
		}
		t.Cleanup(func() { d.conn.Close() })
		if o.panel {
			d.startPanel()
		}
		d.startNotifier(o.notifier)
		return d
	}
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(busConfig, sock)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The bus passes its environment to what it activates (xfconfd).
	d.bus = d.startWithFD("dbus", d.env, "dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=3")
	d.env = append(d.env, "DBUS_SESSION_BUS_ADDRESS="+d.bus)
	if d.conn, err = dbus.Connect(d.bus); err != nil {
		t.Fatalf("connecting to the test's bus %s: %v", d.bus, err)
	}
	t.Cleanup(func() { d.conn.Close() })

	if o.panel {
		d.startPanel()
	}
	d.startNotifier(o.notifier)
	return d
}

// startNotifier starts the notification server named (see deskOptions),
// if any, and waits until it serves.
func (d *desktop) startNotifier(name string) {
	d.t.Helper()
	switch name {
	case "":
		return
	case "dunst":
		d.start("dunst", d.env, "dunst")
	case "xfce4-notifyd":
		d.start("notifyd", d.env, xfceNotifyd())
	}
	d.waitName("org.freedesktop.Notifications", 10*time.Second)
}

// connectAs connects to the session bus at the socket path as the user
// uid, whose bus lets in no one else (root neither): the socket is
// connected from a thread of this process that has taken the user's
// ids, and that thread ends with it (a goroutine that exits locked to
// its thread takes the thread along), so no other code runs as the user.
func connectAs(uid, gid int, path string) (*dbus.Conn, error) {
	type dialed struct {
		fd  int
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		// Raw system calls change this thread's ids only (Go's own
		// Setresuid changes every thread's).
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
			ch <- dialed{-1, fmt.Errorf("setresgid: %w", e)}
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			ch <- dialed{-1, fmt.Errorf("setresuid: %w", e)}
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			if err = unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
				unix.Close(fd)
			}
		}
		ch <- dialed{fd, err}
	}()
	d := <-ch
	if d.err != nil {
		return nil, fmt.Errorf("connecting to %s as uid %d: %w", path, uid, d.err)
	}
	f := os.NewFile(uintptr(d.fd), path)
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	conn, err := dbus.NewConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(uid))}); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// startPanel starts the Xfce panel and waits for its tray host.
func (d *desktop) startPanel() {
	d.t.Helper()
	d.start("panel", d.env, "xfce4-panel", "--disable-wm-check")
	d.waitName("org.kde.StatusNotifierWatcher", 20*time.Second)
}

// xfceNotifyd is where Debian keeps xfce4-notifyd, the Xfce notification
// daemon, which draws actions as buttons.
func xfceNotifyd() string {
	if m, _ := filepath.Glob("/usr/lib/*/xfce4/notifyd/xfce4-notifyd"); len(m) > 0 {
		return m[0]
	}
	return "xfce4-notifyd"
}

// pickAction picks, in dunst's context menu, the first action whose line
// contains pick ("#Start again (tether: bob failed)"), as a user does.
func (d *desktop) pickAction(pick string) {
	d.t.Helper()
	if d.user != nil {
		d.t.Fatal("a user's desktop has no dunst context menu to pick from")
	}
	if err := os.WriteFile(filepath.Join(d.dir, "dunst-pick"), []byte(pick), 0o600); err != nil {
		d.t.Fatal(err)
	}
	d.run(10*time.Second, "dunstctl", "context")
}

// start runs a program of the desktop until the test ends (as the
// desktop's user, where it has one).
func (d *desktop) start(name string, env []string, argv ...string) *deskProc {
	d.t.Helper()
	if d.user != nil {
		return d.startCmd(name, d.user.Command(argv[0], argv[1:]...), env)
	}
	return d.startCmd(name, exec.Command(argv[0], argv[1:]...), env)
}

func (d *desktop) startCmd(name string, cmd *exec.Cmd, env []string) *deskProc {
	d.t.Helper()
	logf, err := os.Create(filepath.Join(d.dir, name+".log"))
	if err != nil {
		d.t.Fatal(err)
	}
	defer logf.Close()
	if cmd.Env == nil { // else the environment its maker chose
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("starting %s: %v", name, err)
	}
	p := &deskProc{name: name, cmd: cmd, done: make(chan struct{}), log: logf.Name()}
	go func() { _ = cmd.Wait(); close(p.done) }()
	d.t.Cleanup(func() {
		p.stop(10 * time.Second)
		if d.t.Failed() {
			d.t.Logf("%s's output:\n%s", name, p.output())
		}
	})
	return p
}

// startWithFD starts a program that writes one line to fd 3 when it is
// ready, and returns that line.
func (d *desktop) startWithFD(name string, env []string, argv ...string) string {
	d.t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		d.t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = []*os.File{w}
	p := d.startCmd(name, cmd, env)
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s == "" {
			d.t.Fatalf("%s said nothing on fd 3:\n%s", name, p.output())
		}
		return s
	case <-time.After(20 * time.Second):
		d.t.Fatalf("%s not ready within 20s:\n%s", name, p.output())
	}
	return ""
}

// waitName waits until someone owns name on the bus.
func (d *desktop) waitName(name string, within time.Duration) {
	d.t.Helper()
	var err error
	if !testproc.UntilEvery(within, 10*time.Millisecond, func() bool {
		var has bool
		err = d.conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has)
		return err == nil && has
	}) {
		d.t.Fatalf("nobody owns %s on the test's bus after %v (%v)", name, within, err)
	}
}

// sweep kills what this desktop started that outlived its parent
// (xfconfd, which the bus activated; the panel's plugin processes; a
// service the tray started) and reaps those this process adopted as a
// subreaper. It runs after every program started with start was stopped
// and waited for.
func (d *desktop) sweep() {
	self := os.Getpid()
	seen := map[int]bool{}
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		pids := d.marked()
		for _, pid := range pids {
			seen[pid] = true
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		for pid := range seen {
			p, err := punix.Stat(pid)
			if err != nil || p.PPid != self {
				delete(seen, pid) // gone, or someone else's to reap
				continue
			}
			if p.Zombie() {
				var ws unix.WaitStatus
				if got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid {
					delete(seen, pid)
				}
			}
		}
		return len(pids) == 0 && len(seen) == 0
	}) && len(seen) > 0 {
		d.t.Errorf("processes of the desktop never ended: %v", seen)
	}
}

// marked returns the live processes with this desktop's marker in their
// environment.
func (d *desktop) marked() []int {
	procs, _ := punix.Processes()
	var out []int
	for _, p := range procs {
		if p.Zombie() || p.Pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/environ")
		if bytes.Contains(b, []byte("TETHER_E2E_DESKTOP="+d.marker+"\x00")) {
			out = append(out, p.Pid)
		}
	}
	return out
}

// sniItem is a tray item on the bus.
type sniItem struct {
	service string
	path    dbus.ObjectPath
	menu    dbus.ObjectPath
}

// waitItem waits until the tray host has registered an item of the
// process pid, and returns it.
func (d *desktop) waitItem(pid int, within time.Duration) sniItem {
	d.t.Helper()
	var found sniItem
	if !testproc.UntilEvery(within, 10*time.Millisecond, func() bool {
		var ok bool
		found, ok = d.itemOf(pid)
		return ok
	}) {
		d.t.Fatalf("no tray item of pid %d registered within %v; registered: %+v", pid, within, d.items())
	}
	v, err := d.conn.Object(found.service, found.path).GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		d.t.Fatalf("the Menu of %s%s: %v", found.service, found.path, err)
	}
	found.menu, _ = v.Value().(dbus.ObjectPath)
	return found
}

// itemOf returns the tray host's registered item of the process pid.
func (d *desktop) itemOf(pid int) (sniItem, bool) {
	for _, it := range d.items() {
		var owner uint32
		if err := d.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, it.service).Store(&owner); err == nil && int(owner) == pid {
			return it, true
		}
	}
	return sniItem{}, false
}

// items are the host's registered items: "busname/object/path" entries of
// org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems.
func (d *desktop) items() []sniItem {
	v, err := d.conn.Object("org.kde.StatusNotifierWatcher", "/StatusNotifierWatcher").GetProperty("org.kde.StatusNotifierWatcher.RegisteredStatusNotifierItems")
	if err != nil {
		return nil
	}
	names, _ := v.Value().([]string)
	var out []sniItem
	for _, n := range names {
		service, path, ok := strings.Cut(n, "/")
		if !ok {
			continue
		}
		out = append(out, sniItem{service: service, path: dbus.ObjectPath("/" + path)})
	}
	return out
}

// iconColor classifies the item's icon (its IconPixmap, ARGB) by the
// colour of its state badge, the disc in its bottom right corner: "red"
// (failed), "amber" (busy), "green" (running) or "grey" (unreachable).
func (d *desktop) iconColor(it sniItem) string {
	d.t.Helper()
	v, err := d.conn.Object(it.service, it.path).GetProperty("org.kde.StatusNotifierItem.IconPixmap")
	if err != nil {
		d.t.Fatalf("IconPixmap: %v", err)
	}
	var pixmaps []struct {
		W, H int32
		Pix  []byte
	}
	if err := dbus.Store([]any{v.Value()}, &pixmaps); err != nil || len(pixmaps) == 0 {
		d.t.Fatalf("IconPixmap %v: %v", v, err)
	}
	var r, g, b, n int
	pm := pixmaps[0]
	// The badge's centre is at 72% of the icon's width and height, its
	// radius 28%; its ground is what is opaque and not its white glyph.
	for y := range int(pm.H) {
		for x := range int(pm.W) {
			dx, dy := float64(x)/float64(pm.W)-0.72, float64(y)/float64(pm.H)-0.72
			i := 4 * (y*int(pm.W) + x)
			if dx*dx+dy*dy > 0.2*0.2 || i+3 >= len(pm.Pix) || pm.Pix[i] != 0xff {
				continue
			}
			if pr, pg, pb := int(pm.Pix[i+1]), int(pm.Pix[i+2]), int(pm.Pix[i+3]); pr+pg+pb < 600 {
				r, g, b, n = r+pr, g+pg, b+pb, n+1
			}
		}
	}
	if n == 0 {
		return "empty"
	}
	r, g, b = r/n, g/n, b/n
	switch {
	case r > g+80 && r > b+40:
		return "red"
	case r > g+40 && g > b+40:
		return "amber"
	case g > r+40 && g > b+20:
		return "green"
	}
	return "grey"
}

// waitIcon waits until the item's icon is of color (see iconColor).
func (d *desktop) waitIcon(it sniItem, color string) {
	d.t.Helper()
	var got string
	if !testproc.UntilEvery(10*time.Second, 20*time.Millisecond, func() bool {
		got = d.iconColor(it)
		return got == color
	}) {
		d.t.Fatalf("the tray's icon is %s, want %s", got, color)
	}
}

// menuNode is one item of a dbusmenu layout.
type menuNode struct {
	id       int32
	label    string // with the mnemonic escapes undone
	enabled  bool
	visible  bool
	kind     string // "separator" or ""
	toggle   int32  // toggle-state: 1 checked, 0 not
	children []menuNode
}

// layout reads the item's whole menu with com.canonical.dbusmenu.GetLayout.
func (d *desktop) layout(it sniItem) (menuNode, error) {
	var rev uint32
	var root []any
	call := d.conn.Object(it.service, it.menu).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if call.Err != nil {
		return menuNode{}, call.Err
	}
	if len(call.Body) != 2 {
		return menuNode{}, fmt.Errorf("GetLayout answered %d values", len(call.Body))
	}
	rev, _ = call.Body[0].(uint32)
	_ = rev
	root, _ = call.Body[1].([]any)
	return toNode(root)
}

func toNode(v []any) (menuNode, error) {
	if len(v) != 3 {
		return menuNode{}, fmt.Errorf("a layout node of %d fields", len(v))
	}
	n := menuNode{enabled: true, visible: true}
	n.id, _ = v[0].(int32)
	props, _ := v[1].(map[string]dbus.Variant)
	if l, ok := props["label"].Value().(string); ok {
		n.label = strings.ReplaceAll(l, "__", "_")
	}
	if e, ok := props["enabled"].Value().(bool); ok {
		n.enabled = e
	}
	if v, ok := props["visible"].Value().(bool); ok {
		n.visible = v
	}
	n.kind, _ = props["type"].Value().(string)
	n.toggle, _ = props["toggle-state"].Value().(int32)
	kids, _ := v[2].([]dbus.Variant)
	for _, k := range kids {
		kv, _ := k.Value().([]any)
		c, err := toNode(kv)
		if err != nil {
			return menuNode{}, err
		}
		n.children = append(n.children, c)
	}
	return n, nil
}

// find returns the visible node reached by label prefixes, one per level.
func (n menuNode) find(path ...string) (menuNode, bool) {
	if len(path) == 0 {
		return n, true
	}
	for _, c := range n.children {
		if c.kind != "separator" && c.visible && strings.HasPrefix(c.label, path[0]) {
			return c.find(path[1:]...)
		}
	}
	return menuNode{}, false
}

func (n menuNode) String() string {
	var b strings.Builder
	var walk func(n menuNode, depth int)
	walk = func(n menuNode, depth int) {
		for _, c := range n.children {
			if !c.visible {
				continue
			}
			label := c.label
			if c.kind == "separator" {
				label = "---"
			}
			fmt.Fprintf(&b, "\n%s%d %q enabled=%v toggle=%d", strings.Repeat("  ", depth), c.id, label, c.enabled, c.toggle)
			walk(c, depth+1)
		}
	}
	walk(n, 1)
	return b.String()
}

// waitMenu waits until the item's menu satisfies ok, and returns it.
func (d *desktop) waitMenu(it sniItem, what string, ok func(menuNode) bool) menuNode {
	d.t.Helper()
	var m menuNode
	var err error
	if !testproc.UntilEvery(15*time.Second, 20*time.Millisecond, func() bool {
		// fyne.io/systray answers the first GetLayout after a rebuild
		// one level deep (for libdbusmenu's sake); asking again gets it
		// all. A menu being rebuilt grows item by item: only one that is
		// whole (it ends with Quit tray) counts.
		m, err = d.layout(it)
		return err == nil && len(m.children) > 0 && m.children[len(m.children)-1].label == "Quit tray" && ok(m)
	}) {
		d.t.Fatalf("the tray's menu never showed %s (%v):%s", what, err, m)
	}
	return m
}

// click sends the tray a click on the menu item id, as the host does.
func (d *desktop) click(it sniItem, id int32) {
	d.t.Helper()
	if err := d.sendClick(it, id); err != nil {
		d.t.Fatalf("clicking item %d: %v", id, err)
	}
}

// clickQuit clicks an item that ends the tray: the tray may leave the bus
// before its answer to the click is sent, which the bus reports as
// NoReply; the caller checks how the tray ended.
func (d *desktop) clickQuit(it sniItem, id int32) {
	d.t.Helper()
	err := d.sendClick(it, id)
	var de dbus.Error
	if err != nil && !(errors.As(err, &de) && de.Name == "org.freedesktop.DBus.Error.NoReply") {
		d.t.Fatalf("clicking item %d: %v", id, err)
	}
}

func (d *desktop) sendClick(it sniItem, id int32) error {
	return d.conn.Object(it.service, it.menu).Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
}

// notifications returns the summaries and bodies dunst has shown: what is
// on screen is closed first, so that the history has it.
func (d *desktop) notifications() []string {
	d.t.Helper()
	d.run(10*time.Second, "dunstctl", "close-all")
	out := d.run(10*time.Second, "dunstctl", "history")
	var h struct {
		Data [][]map[string]struct {
			Data any `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		d.t.Fatalf("dunstctl history: %v\n%s", err, out)
	}
	var all []string
	for _, group := range h.Data {
		for _, n := range group {
			all = append(all, fmt.Sprintf("%v: %v", n["summary"].Data, n["body"].Data))
		}
	}
	return all
}

// waitNotification waits until dunst has shown a notification containing
// every one of parts.
func (d *desktop) waitNotification(within time.Duration, parts ...string) string {
	d.t.Helper()
	var all []string
	var found string
	if !testproc.UntilEvery(within, 50*time.Millisecond, func() bool {
		all = d.notifications()
		for _, n := range all {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(n, p) }) {
				found = n
				return true
			}
		}
		return false
	}) {
		d.t.Fatalf("no notification with %q within %v; dunst has shown:\n%s", parts, within, strings.Join(all, "\n"))
	}
	return found
}

// command is a program to run on the desktop, as its user where it has
// one (whose session bus lets no one else in).
func (d *desktop) command(argv ...string) *exec.Cmd {
	if d.user != nil {
		cmd := d.user.Command(argv[0], argv[1:]...)
		cmd.Env = append(cmd.Env, d.env...)
		return cmd
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), d.env...)
	return cmd
}

// run runs a program on the desktop and returns its output.
func (d *desktop) run(within time.Duration, argv ...string) string {
	d.t.Helper()
	out, errs, err := runBounded(d.t, d.command(argv...), within)
	if err != nil {
		d.t.Fatalf("%v: %v\n%s%s", argv, err, out, errs)
	}
	return out
}

// screenshot captures the whole screen.
func (d *desktop) screenshot() (image.Image, []byte) {
	d.t.Helper()
	out := d.run(20*time.Second, "import", "-window", "root", "png:-")
	img, err := png.Decode(strings.NewReader(out))
	if err != nil {
		d.t.Fatalf("decoding the screenshot: %v", err)
	}
	return img, []byte(out)
}

// waitScreen waits until the screen satisfies ok, and returns its PNG.
func (d *desktop) waitScreen(what string, ok func(image.Image) bool) []byte {
	d.t.Helper()
	var b []byte
	if !testproc.UntilEvery(15*time.Second, 50*time.Millisecond, func() bool {
		var img image.Image
		img, b = d.screenshot()
		return ok(img)
	}) {
		// Kept after the test, to look at.
		f, err := os.CreateTemp("", "tether-tray-screen-*.png")
		if err == nil {
			_, _ = f.Write(b)
			f.Close()
		}
		d.t.Fatalf("the screen never showed %s (last screenshot: %s)", what, f.Name())
	}
	return b
}

// light reports whether the pixel at x, y is light (a menu's background).
func light(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r > 0xc000 && g > 0xc000 && b > 0xc000
}

// vivid reports whether the pixel at x, y is strongly coloured (an icon).
func vivid(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	hi, lo := max(r, g, b), min(r, g, b)
	return hi-lo > 0x4000
}

func pngDecode(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }

// writePNG writes the part r of img to path.
func writePNG(path string, img image.Image, r image.Rectangle) error {
	out := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	for y := range r.Dy() {
		for x := range r.Dx() {
			out.Set(x, y, img.At(r.Min.X+x, r.Min.Y+y))
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
