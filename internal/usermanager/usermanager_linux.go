// Package usermanager is test support: it starts a real systemd user
// manager (systemd --user) for one unprivileged user, for the length of a
// test, on a machine whose init is not systemd and without touching the
// machine's own /run, users or cgroups beyond directories it removes again.
//
// A manager gets what a login would have given it:
//
//   - a runtime directory of its own, 0700 and the user's, mounted at
//     /run/user/UID inside a private mount namespace (a temporary directory
//     outside it);
//   - the /run/systemd/system marker systemd checks for, which exists only
//     in that namespace: a tmpfs is mounted on /run there, with private
//     propagation, so nothing of it reaches the machine's /run;
//   - a cgroup directory delegated to the user in every hierarchy systemd
//     uses (cgroup v2, and on a hybrid layout the v1 name=systemd one), with
//     the manager in its "manager" child and the processes a test starts
//     through Command in its "session" child, as a login session sits
//     beside user@UID.service: session stays root's, as a login's session
//     scope does, so a process there has no cgroup it may write but can
//     be moved into a scope of the manager's;
//   - a private session bus: a dbus-daemon --session that the manager
//     starts on demand from dbus.socket at $XDG_RUNTIME_DIR/bus, written
//     into the user's temporary HOME. A user manager exposes its API on the
//     bus only once dbus.socket and dbus.service run under it; it never
//     connects to a bus daemon started beside it.
//
// Everything is undone in the test's cleanup, also when the test fails: the
// manager is stopped (and its cgroup killed if it does not stop), every
// process is waited for, the cgroups and temporary directories are removed.
// The mounts live and die with the namespace.
//
// A test that adopts orphans as a child subreaper and reaps them should
// call Start after registering that cleanup, so the manager is stopped
// (and waited for) first.
//
// Where this cannot be set up (not root, no systemd, no writable cgroup v2,
// a tool missing) Start skips the test with a line saying why; with
// CI=true it fails it instead.
package usermanager

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// systemdPaths are where distributions install the manager binary.
var systemdPaths = []string{"/lib/systemd/systemd", "/usr/lib/systemd/systemd"}

// tools are the programs the rig runs besides systemd: util-linux's
// unshare, nsenter and setpriv, systemd's systemctl and busctl, and the
// bus daemon.
var tools = []string{"unshare", "nsenter", "setpriv", "systemctl", "busctl", "dbus-daemon", "sh"}

// startTimeout bounds the wait for the manager to be up with its API on
// the bus; stopTimeout bounds its orderly exit.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// Options choose the user.
type Options struct {
	// UID and GID of the user the manager runs as. A zero UID picks an
	// unprivileged user from the passwd database (see PickUser).
	UID, GID int
}

// Manager is a running systemd --user.
type Manager struct {
	UID, GID int
	// Home is the user's HOME for the test, a temporary directory that
	// is the user's; the manager reads its units from
	// Home/.config/systemd/user.
	Home string
	// RuntimeDir is the user's runtime directory as the test process sees
	// it; inside the manager's mount namespace, where Command runs, it is
	// mounted at /run/user/UID (RunUserDir).
	RuntimeDir string
	// Cgroup is the delegated cgroup v2 directory; the manager and its
	// units live below Cgroup/manager, Command's processes in
	// Cgroup/session.
	Cgroup string
	// PID is the manager's.
	PID int

	t      testing.TB
	v1     string // the delegated name=systemd v1 directory, if any
	cmd    *exec.Cmd
	exited chan struct{}
	log    *testproc.Buffer
}

// PickUser returns an unprivileged user to run a manager as: the first
// account of the passwd database with a uid of 1000 or more that is not
// nobody, else nobody.
func PickUser() (uid, gid int, err error) {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	nobody := -1
	nobodyGID := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Split(s.Text(), ":")
		if len(fs) < 4 {
			continue
		}
		u, err1 := strconv.Atoi(fs[2])
		g, err2 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil {
			continue
		}
		switch {
		case fs[0] == "nobody":
			nobody, nobodyGID = u, g
		case u >= 1000 && u < 60000:
			return u, g, nil
		}
	}
	if nobody > 0 {
		return nobody, nobodyGID, nil
	}
	return 0, 0, errors.New("no unprivileged user in /etc/passwd")
}

// Start starts a manager for t. It returns once the manager has finished
// starting up and owns org.freedesktop.systemd1 on its session bus.
func Start(t testing.TB, opts Options) *Manager {
	t.Helper()
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "a systemd user manager for the test needs root (cgroup delegation, a mount namespace)")
	}
	systemd := ""
	for _, p := range systemdPaths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			systemd = p
			break
		}
	}
	if systemd == "" {
		testproc.SkipOrFail(t, "no systemd binary at %s (apt-get install systemd)", strings.Join(systemdPaths, " or "))
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			testproc.SkipOrFail(t, "a systemd user manager for the test needs %s: %v", tool, err)
		}
	}
	v2, v1, err := hierarchies()
	if err != nil {
		testproc.SkipOrFail(t, "no cgroup v2 hierarchy to delegate: %v", err)
	}
	if opts.UID == 0 {
		if opts.UID, opts.GID, err = PickUser(); err != nil {
			testproc.SkipOrFail(t, "%v", err)
		}
	}
	m := &Manager{UID: opts.UID, GID: opts.GID, t: t, exited: make(chan struct{}), log: &testproc.Buffer{}}
	t.Cleanup(m.stop)

	name := "usermanager-" + randomHex()
	if err := m.makeDirs(name); err != nil {
		t.Fatal(err)
	}
	if m.Cgroup, err = delegate(v2, name, m.UID, m.GID); err != nil {
		testproc.SkipOrFail(t, "cgroup v2 at %s is not writable here: %v", v2, err)
	}
	if v1 != "" {
		if m.v1, err = delegate(v1, name, m.UID, m.GID); err != nil {
			t.Fatalf("delegating the name=systemd cgroup v1 hierarchy: %v", err)
		}
	}
	if err := m.writeBusUnits(); err != nil {
		t.Fatal(err)
	}
	m.launch(systemd)
	m.waitUp()
	return m
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// makeDirs makes the temporary HOME and runtime directory, the user's.
func (m *Manager) makeDirs(name string) error {
	base, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return err
	}
	// Traversable, so the user reaches its directories inside.
	if err := os.Chmod(base, 0o755); err != nil {
		return err
	}
	m.Home, m.RuntimeDir = filepath.Join(base, "home"), filepath.Join(base, "run")
	for _, d := range []string{m.Home, m.RuntimeDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		if err := os.Chown(d, m.UID, m.GID); err != nil {
			return err
		}
	}
	return nil
}

// RunUserDir is the runtime directory's path inside the manager's mount
// namespace, the one its units and Command see as XDG_RUNTIME_DIR.
func (m *Manager) RunUserDir() string { return "/run/user/" + strconv.Itoa(m.UID) }

// HostPath maps a path inside the runtime directory, as Command's
// processes see it, to the same file as the test process sees it.
func (m *Manager) HostPath(p string) string {
	if rest, ok := strings.CutPrefix(p, m.RunUserDir()); ok && (rest == "" || rest[0] == '/') {
		return m.RuntimeDir + rest
	}
	return p
}

// Bus is the session bus address for processes inside the namespace.
func (m *Manager) Bus() string { return "unix:path=" + m.RunUserDir() + "/bus" }

// Env is the user's environment inside the namespace, as a login would
// give it: HOME, USER, LOGNAME, PATH, XDG_RUNTIME_DIR and
// DBUS_SESSION_BUS_ADDRESS.
func (m *Manager) Env() []string {
	name := strconv.Itoa(m.UID)
	if u, err := user.LookupId(name); err == nil {
		name = u.Username
	}
	return []string{
		"HOME=" + m.Home, "USER=" + name, "LOGNAME=" + name,
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"XDG_RUNTIME_DIR=" + m.RunUserDir(),
		"DBUS_SESSION_BUS_ADDRESS=" + m.Bus(),
	}
}

// Command returns a command that runs name as the user, inside the
// manager's mount namespace and in the session cgroup of every delegated
// hierarchy, with Env as its environment (set cmd.Env to change it). Its
// pid is the process's own: nothing forks in between.
func (m *Manager) Command(name string, args ...string) *exec.Cmd {
	script := "echo $$ > " + shQuote(filepath.Join(m.Cgroup, "session", "cgroup.procs"))
	if m.v1 != "" {
		script += " && echo $$ > " + shQuote(filepath.Join(m.v1, "session", "cgroup.procs"))
	}
	script += ` && exec setpriv --reuid=` + strconv.Itoa(m.UID) + ` --regid=` + strconv.Itoa(m.GID) + ` --clear-groups -- "$@"`
	argv := append([]string{"--mount=/proc/" + strconv.Itoa(m.PID) + "/ns/mnt", "--", "sh", "-c", script, "sh", name}, args...)
	cmd := exec.Command("nsenter", argv...)
	cmd.Env = m.Env()
	return cmd
}

// Output runs name as Command does and returns its combined output; it
// is killed if it takes longer than a minute.
func (m *Manager) Output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := m.Command(name, args...)
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	out, err := c.CombinedOutput()
	return string(out), err
}

// Systemctl runs systemctl --user with args as the user.
func (m *Manager) Systemctl(args ...string) (string, error) {
	return m.Output("systemctl", append([]string{"--user"}, args...)...)
}

// Log returns what the manager printed.
func (m *Manager) Log() string { return m.log.String() }

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launch starts the manager: a shell, in a mount namespace of its own,
// moves itself into the manager cgroups, mounts a tmpfs on /run with the
// marker and the runtime directory in it, and execs systemd --user as the
// user. unshare, sh and setpriv exec each other, so the manager keeps the
// pid the test started.
func (m *Manager) launch(systemd string) {
	uid := strconv.Itoa(m.UID)
	script := "set -e\n" +
		"echo $$ > " + shQuote(filepath.Join(m.Cgroup, "manager", "cgroup.procs")) + "\n"
	if m.v1 != "" {
		script += "echo $$ > " + shQuote(filepath.Join(m.v1, "manager", "cgroup.procs")) + "\n"
	}
	script += "mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run\n" +
		"mkdir -p /run/systemd/system " + m.RunUserDir() + "\n" +
		"mount --bind " + shQuote(m.RuntimeDir) + " " + m.RunUserDir() + "\n" +
		"exec setpriv --reuid=" + uid + " --regid=" + strconv.Itoa(m.GID) + " --clear-groups -- " + systemd + " --user --log-target=console\n"
	// The manager takes the bus address from its own dbus.socket.
	var env []string
	for _, kv := range m.Env() {
		if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script)
	cmd.Env = env
	// In the test's own session: a test that reaps what it adopts as a
	// child subreaper leaves the processes of its session alone.
	cmd.Stdout, cmd.Stderr = m.log, m.log
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("starting systemd --user: %v", err)
	}
	m.cmd, m.PID = cmd, cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(m.exited) }()
}

// waitUp waits until the manager has started up and its API answers on
// the session bus.
func (m *Manager) waitUp() {
	deadline := time.Now().Add(startTimeout)
	private := filepath.Join(m.RuntimeDir, "systemd", "private")
	if !testproc.UntilEvery(time.Until(deadline), 5*time.Millisecond, func() bool {
		select {
		case <-m.exited:
			m.t.Fatalf("systemd --user exited while starting (%v):\n%s", m.cmd.ProcessState, m.Log())
		default:
		}
		_, err := os.Stat(private)
		return err == nil
	}) {
		m.t.Fatalf("systemd --user did not start within %v:\n%s", startTimeout, m.Log())
	}
	out, err := m.Systemctl("is-system-running", "--wait")
	if state := strings.TrimSpace(out); state != "running" {
		units, _ := m.Systemctl("--failed", "--no-pager")
		m.t.Fatalf("systemd --user is %q (%v); failed units:\n%s\nmanager log:\n%s", state, err, units, m.Log())
	}
	// The first call on the bus starts the bus daemon; the manager
	// connects once it runs.
	if !testproc.UntilEvery(time.Until(deadline), 10*time.Millisecond, func() bool {
		out, err = m.Output("busctl", "--user", "call", "org.freedesktop.DBus", "/org/freedesktop/DBus",
			"org.freedesktop.DBus", "GetNameOwner", "s", "org.freedesktop.systemd1")
		return err == nil
	}) {
		m.t.Fatalf("org.freedesktop.systemd1 not on the session bus within %v: %v: %s\nmanager log:\n%s", startTimeout, err, out, m.Log())
	}
}

// busUnits are the session bus the manager runs, as dbus-user-session
// ships it, in the user's own unit directory: the test does not depend on
// that package, and no system-wide bus unit can stand in for it.
const busSocket = `[Unit]
Description=D-Bus User Message Bus Socket

[Socket]
ListenStream=%t/bus
ExecStartPost=-systemctl --user set-environment DBUS_SESSION_BUS_ADDRESS=unix:path=%t/bus
`

const busService = `[Unit]
Description=D-Bus User Message Bus
Requires=dbus.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=%s --session --address=systemd: --nofork --nopidfile --systemd-activation --nosyslog
`

func (m *Manager) writeBusUnits() error {
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		return err
	}
	dir := filepath.Join(m.Home, ".config", "systemd", "user")
	wants := filepath.Join(dir, "sockets.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "dbus.socket"), []byte(busSocket), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "dbus.service"), fmt.Appendf(nil, busService, daemon), 0o644); err != nil {
		return err
	}
	if err := os.Symlink("../dbus.socket", filepath.Join(wants, "dbus.socket")); err != nil {
		return err
	}
	return chownTree(filepath.Join(m.Home, ".config"), m.UID, m.GID)
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// stop ends the manager and removes everything Start made.
func (m *Manager) stop() {
	t := m.t
	if m.cmd != nil {
		// SIGTERM: the manager stops its units (and so the bus) and
		// exits.
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(stopTimeout):
			t.Errorf("systemd --user did not exit within %v of SIGTERM; killing its cgroup", stopTimeout)
		}
	}
	if m.Cgroup != "" {
		// Whatever is left in the delegated cgroup, the manager itself
		// included if it hung, and what Command started.
		if err := killCgroup(m.Cgroup); err != nil {
			t.Errorf("emptying %s: %v", m.Cgroup, err)
		}
	}
	if m.cmd != nil {
		select {
		case <-m.exited:
		case <-time.After(stopTimeout):
			t.Errorf("systemd --user (pid %d) still not reaped", m.PID)
		}
	}
	for _, dir := range []string{m.Cgroup, m.v1} {
		if dir != "" {
			if err := removeCgroupTree(dir); err != nil {
				t.Errorf("removing %s: %v", dir, err)
			}
		}
	}
	if m.Home != "" {
		if err := os.RemoveAll(filepath.Dir(m.Home)); err != nil {
			t.Errorf("removing the manager's directories: %v", err)
		}
	}
}
