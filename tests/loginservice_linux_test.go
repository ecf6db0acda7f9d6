package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/internal/usermanager"
)

// loginRig is a real systemd user manager (internal/usermanager) and a
// tether binary its unprivileged user can run, with a config of two
// polite agents, one of them a command found only in ~/bin.
type loginRig struct {
	t      *testing.T
	m      *usermanager.Manager
	exe    string // the user's copy of tether
	bin    string // ~/bin, in the PATH of the installing shell only
	marker string
}

func newLoginRig(t *testing.T) *loginRig {
	t.Helper()
	needTools(t, "bash", "sleep")
	// The test reaps what it adopts as a child subreaper; the manager is
	// stopped (and waited for) first, in its own cleanup.
	m := usermanager.Start(t, usermanager.Options{})
	r := &loginRig{t: t, m: m, bin: filepath.Join(m.Home, "bin"), marker: uniqueMarker()}
	cleanupTrees(t, r.marker)
	r.exe = filepath.Join(r.bin, "tether")
	if err := os.MkdirAll(r.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tether)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// An agent's command that only ~/bin has.
	agent := "#!/bin/bash\n(exec -a \"$1-child\" sleep 1000) &\nwait\n"
	if err := os.WriteFile(filepath.Join(r.bin, "tether-test-agent"), []byte(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	r.writeConfig(1)
	return r
}

// writeConfig writes n agents (x, y, ...) to the user's config.
func (r *loginRig) writeConfig(n int) {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for i := range n {
		id := string(rune('x' + i))
		fmt.Fprintf(&b, "  - id: %s\n    command: [tether-test-agent, %s-%s]\n    autostart: true\n    stop_timeout: 1s\n", id, r.marker, id)
	}
	dir := filepath.Join(r.m.Home, ".config", "tether")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents.yaml"), []byte(b.String()), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := chownAll(filepath.Join(r.m.Home, ".config"), r.m.UID, r.m.GID); err != nil {
		r.t.Fatal(err)
	}
	if err := chownAll(r.bin, r.m.UID, r.m.GID); err != nil {
		r.t.Fatal(err)
	}
}

func chownAll(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// tether runs the user's tether with args, as the user, in a shell whose
// PATH has ~/bin when withBin.
func (r *loginRig) tether(withBin bool, args ...string) result {
	r.t.Helper()
	cmd := r.m.Command(r.exe, args...)
	path := "PATH=/usr/local/bin:/usr/bin:/bin"
	if withBin {
		path = "PATH=" + r.bin + ":/usr/local/bin:/usr/bin:/bin"
	}
	cmd.Env = append(cmd.Env, path)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
	}
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func (r *loginRig) must(withBin bool, args ...string) result {
	r.t.Helper()
	res := r.tether(withBin, args...)
	if res.code != 0 {
		r.t.Fatalf("tether %s: exit %d\n%s%s\nmanager log:\n%s", strings.Join(args, " "), res.code, res.stdout, res.stderr, r.tail())
	}
	return res
}

func (r *loginRig) tail() string {
	log := r.m.Log()
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	return log
}

// status is "tether status --json" as the user.
func (r *loginRig) status() (map[string]statusRow, int) {
	r.t.Helper()
	res := r.tether(false, "status", "--json")
	var out struct {
		Agents []statusRow `json:"agents"`
	}
	rows := map[string]statusRow{}
	if res.code == 0 {
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			r.t.Fatalf("status --json: %v: %s", err, res.stdout)
		}
	}
	for _, a := range out.Agents {
		rows[a.ID] = a
	}
	return rows, res.code
}

// waitRunning waits until every id runs, and returns the rows.
func (r *loginRig) waitRunning(ids ...string) map[string]statusRow {
	r.t.Helper()
	var (
		rows map[string]statusRow
		code int
	)
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		rows, code = r.status()
		n := 0
		for _, id := range ids {
			if rows[id].State == api.StateRunning {
				n++
			}
		}
		return code == 0 && n == len(ids)
	}) {
		r.t.Fatalf("agents %v not running: exit %d, %+v\nmanager log:\n%s", ids, code, rows, r.tail())
	}
	return rows
}

// unit is a property of the installed unit, as the manager has it.
func (r *loginRig) unit(prop string) string {
	r.t.Helper()
	out, err := r.m.Systemctl("show", "--value", "-p", prop, "tether.service")
	if err != nil {
		r.t.Fatalf("systemctl show %s: %v: %s", prop, err, out)
	}
	return strings.TrimSpace(out)
}

// The login service against a real systemd --user, as its unprivileged
// user: install starts it and returns once it answers (no race with the
// next status); the unit is Type=notify with the installing shell's PATH,
// a stop timeout from the config and ExecReload; a SIGKILL of the
// service is restarted by systemd and the agents come back once; a
// reload through systemctl applies the config; check warns of what the
// installed unit lacks; the toggle off disables and stops nothing, on
// enables and starts; uninstall says what it stopped.
func TestLoginServiceUnderSystemd(t *testing.T) {
	r := newLoginRig(t)
	m := r.marker

	// Install, from a shell whose PATH has ~/bin: started, answering.
	res := r.must(true, "service", "install")
	if !strings.Contains(res.stdout, "started: the service answers") {
		t.Errorf("install said %q, want that it started the service", res.stdout)
	}
	if _, code := r.status(); code != 0 {
		t.Fatalf("status right after install: exit %d", code)
	}
	rows := r.waitRunning("x")
	exactlyOnce(t, 0, map[string]int{m + "-x": 1})
	for prop, want := range map[string]string{"Type": "notify", "ActiveState": "active", "TimeoutStopUSec": "30s", "UnitFileState": "enabled"} {
		if got := r.unit(prop); got != want {
			t.Errorf("unit %s=%s, want %s", prop, got, want)
		}
	}
	if env := r.unit("Environment"); !strings.Contains(env, "PATH="+r.bin+":") {
		t.Errorf("unit Environment=%s, want the installing shell's PATH with %s", env, r.bin)
	}
	if reload := r.unit("ExecReload"); !strings.Contains(reload, "-HUP") {
		t.Errorf("ExecReload=%s", reload)
	}
	// Installed from the shell, it starts at login: what the tray's
	// switch shows.
	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, "; starts at login") {
		t.Errorf("service status after install: %q, want that it starts at login", res.stdout)
	}
	// Installing again with the service running changes nothing.
	if res := r.must(true, "service", "install"); !strings.Contains(res.stdout, "already") {
		t.Errorf("second install said %q", res.stdout)
	}

	// A SIGKILL: systemd restarts it, and x is back once, a new tree.
	pid := r.unit("MainPID")
	n, _ := strconv.Atoi(pid)
	if n <= 0 {
		t.Fatalf("MainPID %q", pid)
	}
	if out, err := r.m.Systemctl("kill", "--signal=KILL", "--kill-whom=main", "tether.service"); err != nil {
		t.Fatalf("kill: %v: %s", err, out)
	}
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		return r.unit("MainPID") != pid && r.unit("ActiveState") == "active"
	}) {
		t.Fatalf("systemd did not restart the service: %s %s\n%s", r.unit("ActiveState"), r.unit("MainPID"), r.tail())
	}
	after := r.waitRunning("x")
	if after["x"].PID == rows["x"].PID {
		t.Errorf("x kept pid %d across the service's SIGKILL", rows["x"].PID)
	}
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1})

	// A reload through the manager: RELOADING, READY, the new agent.
	r.writeConfig(2)
	if out, err := r.m.Systemctl("reload", "tether.service"); err != nil {
		t.Fatalf("systemctl reload: %v: %s\n%s", err, out, r.tail())
	}
	r.waitRunning("x", "y")
	if got := r.unit("ActiveState"); got != "active" {
		t.Errorf("after the reload the unit is %s", got)
	}
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1})

	// check: fine from the installing shell; from one without ~/bin it
	// stays fine (the unit has the PATH); a shell with a dir the unit
	// lacks, and a longer stop, are warned of.
	if res := r.must(true, "check"); strings.Contains(res.stderr, "warning") {
		t.Errorf("check from the installing shell warns: %s", res.stderr)
	}
	r.must(true, "service", "stop")
	// Installed and stopped: the advice is to start what is installed.
	if res := r.tether(true, "status"); res.code != 3 || !strings.Contains(res.stderr, `"tether service start"`) {
		t.Errorf("status of an installed, stopped service: exit %d, %q", res.code, res.stderr)
	}
	r.must(false, "service", "install", "--no-start") // the unit's PATH is now the short one
	res = r.must(true, "check")
	if !strings.Contains(res.stderr, "tether-test-agent") || !strings.Contains(res.stderr, "not in the PATH the installed service gives") {
		t.Errorf("check with a command only this shell finds: %q", res.stderr)
	}
	r.must(true, "service", "install", "--no-start")
	cfg := filepath.Join(r.m.Home, ".config", "tether", "agents.yaml")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "stop_timeout: 1s", "stop_timeout: 50s", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.must(true, "check"); !strings.Contains(res.stderr, "stopping these agents may take") {
		t.Errorf("check with a stop longer than the unit's: %q", res.stderr)
	}
	r.writeConfig(2)
	r.must(true, "service", "install", "--no-start")

	// start fails with the manager's word when the service cannot start
	// (a config it refuses), and returns once it answers when it can.
	if err := os.WriteFile(cfg, []byte("agents: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.tether(true, "service", "start"); res.code != 1 || !strings.Contains(res.stderr, "Result=exit-code") {
		t.Errorf("service start of a service that cannot start: exit %d, %q; want 1 with the manager's state", res.code, res.stderr)
	}
	r.writeConfig(2)
	res = r.must(true, "service", "start")
	if _, code := r.status(); code != 0 || !strings.Contains(res.stdout, "answers") {
		t.Fatalf("right after service start: status exit %d, start said %q", code, res.stdout)
	}
	rows = r.waitRunning("x", "y")

	// The toggle: off disables and stops nothing; on enables again, and
	// starts the service when it does not run.
	r.must(true, "tray", "--set-login=off")
	if got := r.unit("UnitFileState"); got != "disabled" {
		t.Errorf("after the toggle off the unit is %s", got)
	}
	if got := r.unit("ActiveState"); got != "active" {
		t.Errorf("the toggle off stopped the service: %s", got)
	}
	if after := r.waitRunning("x", "y"); after["x"].PID != rows["x"].PID || after["y"].PID != rows["y"].PID {
		t.Errorf("the toggle off restarted agents: %+v, was %+v", after, rows)
	}
	autostart := filepath.Join(r.m.Home, ".config", "autostart", "tether.desktop")
	if _, err := os.Stat(autostart); !os.IsNotExist(err) {
		t.Errorf("the autostart entry is still there: %v", err)
	}
	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, "; does not start at login") {
		t.Errorf("service status after the toggle off: %q", res.stdout)
	}
	r.must(true, "service", "stop")
	// The toggle on from a session whose PATH lacks ~/bin, as a tray
	// started at login has: the unit keeps the PATH it was installed with.
	r.must(false, "tray", "--set-login=on")
	if got := r.unit("UnitFileState"); got != "enabled" {
		t.Errorf("after the toggle on the unit is %s", got)
	}
	if env := r.unit("Environment"); !strings.Contains(env, "PATH="+r.bin+":") {
		t.Errorf("the toggle on rewrote the unit's PATH: Environment=%s, want %s first", env, r.bin)
	}
	if _, code := r.status(); code != 0 {
		t.Errorf("after the toggle on the service does not answer: exit %d", code)
	}
	entry, err := os.ReadFile(autostart)
	if err != nil || !strings.Contains(string(entry), "TryExec="+r.exe) || !strings.Contains(string(entry), "Icon=") || !strings.Contains(string(entry), "tray --at-login") {
		t.Errorf("autostart entry (%v):\n%s", err, entry)
	}
	r.waitRunning("x", "y")

	// A newer binary installs over the running service: it is upgraded in
	// place, the same pid, every agent kept.
	rows = r.waitRunning("x", "y")
	mainPID := r.unit("MainPID")
	newer := filepath.Join(r.bin, "tether-new")
	if b, err := os.ReadFile(r.exe); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(newer, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chownAll(r.bin, r.m.UID, r.m.GID); err != nil {
		t.Fatal(err)
	}
	exe := r.exe
	r.exe = newer
	res = r.must(true, "service", "install")
	if !strings.Contains(res.stdout, "upgrading it to this binary") || !strings.Contains(res.stdout, "every agent kept running") {
		t.Errorf("install of a newer binary said %q", res.stdout)
	}
	if got := r.unit("MainPID"); got != mainPID {
		t.Errorf("the service's pid went from %s to %s", mainPID, got)
	}
	if after := r.waitRunning("x", "y"); after["x"].PID != rows["x"].PID || after["y"].PID != rows["y"].PID {
		t.Errorf("the upgrade restarted agents: %+v, was %+v", after, rows)
	}
	r.exe = exe

	// Uninstall: as its help says, it stops the service, says so and
	// with which agents, and removes the tray's autostart entry too (left,
	// its tray would start the service at the next login).
	if help := r.must(true, "help", "service"); !strings.Contains(help.stdout, "stop the registered service and its agents, and remove the") {
		t.Errorf("help service says of uninstall:\n%s", help.stdout)
	}
	if _, err := os.Stat(autostart); err != nil {
		t.Fatalf("before uninstall, the autostart entry: %v", err)
	}
	res = r.must(true, "service", "uninstall")
	if !strings.Contains(res.stdout, "stopped the service") || !strings.Contains(res.stdout, "x, y") || !strings.Contains(res.stdout, "autostart entry") {
		t.Errorf("uninstall said %q", res.stdout)
	}
	if _, err := os.Stat(autostart); !os.IsNotExist(err) {
		t.Errorf("uninstall left the tray's autostart entry: %v", err)
	}
	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, "; does not start at login") {
		t.Errorf("service status after uninstall: %q", res.stdout)
	}
	exactlyOnce(t, 0, map[string]int{m + "-x": 0, m + "-y": 0})
	if _, code := r.status(); code != 3 {
		t.Errorf("status after uninstall: exit %d, want 3", code)
	}
	if _, err := os.Stat(filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service")); !os.IsNotExist(err) {
		t.Errorf("the unit is still there: %v", err)
	}
}

// survive_service_crash under the login service: the agent's guardian is
// in a transient scope of its own, outside the unit's cgroup, so the
// SIGKILL of the service (after which systemd kills what is left of the
// unit) leaves the tree, and the service systemd starts again adopts it:
// the same pid, one tree.
func TestSurviveServiceCrashUnderSystemd(t *testing.T) {
	r := newLoginRig(t)
	m := r.marker
	cfg := filepath.Join(r.m.Home, ".config", "tether", "agents.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "    survive_service_crash: 1m\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	r.must(true, "service", "install")
	rows := r.waitRunning("x")
	exactlyOnce(t, 0, map[string]int{m + "-x": 1})
	pid := r.unit("MainPID")
	if out, err := r.m.Systemctl("kill", "--signal=KILL", "--kill-whom=main", "tether.service"); err != nil {
		t.Fatalf("kill: %v: %s", err, out)
	}
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		return r.unit("MainPID") != pid && r.unit("ActiveState") == "active"
	}) {
		t.Fatalf("systemd did not restart the service: %s\n%s", r.unit("ActiveState"), r.tail())
	}
	after := r.waitRunning("x")
	if after["x"].PID != rows["x"].PID {
		log, _ := os.ReadFile(filepath.Join(r.m.Home, ".local", "state", "tether", "default", "logs", "x.log"))
		t.Errorf("x runs as pid %d after the service's crash, was %d: not adopted\n%s", after["x"].PID, rows["x"].PID, log)
	}
	exactlyOnce(t, 300*time.Millisecond, map[string]int{m + "-x": 1})
	r.must(true, "service", "uninstall")
	exactlyOnce(t, 0, map[string]int{m + "-x": 0})
}

// A service its user manager starts again after a crash: the tray, on a
// desktop of the manager's user with a real panel and notification
// server, says so once, at low urgency, naming the agents the restart
// took down (their trees are new), and raises no "service stopped".
func TestTrayToldOfTheManagersRestart(t *testing.T) {
	r := newLoginRig(t)
	ids := r.writeAgents(3)
	r.must(true, "service", "install")
	before := r.waitRunning(ids...)
	d := newDesktopWith(t, deskOptions{panel: true, notifier: "dunst", user: r.m})
	// The user's bus is the manager's, in its mount namespace: a
	// monitor of the user's own there sees what the tray sends.
	needTools(t, "dbus-monitor")
	monitor := d.start("monitor", nil, "dbus-monitor", "--session", "type='method_call',interface='org.freedesktop.Notifications',member='Notify'")
	tray := d.start("tray", nil, r.exe, "tray")
	item := d.waitItem(tray.cmd.Process.Pid, 30*time.Second)
	d.waitMenu(item, "3 running", func(n menuNode) bool { return n.children[0].label == "3 running" })

	pid := r.unit("MainPID")
	if out, err := r.m.Systemctl("kill", "--signal=KILL", "--kill-whom=main", "tether.service"); err != nil {
		t.Fatalf("kill: %v: %s", err, out)
	}
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		return r.unit("MainPID") != pid && r.unit("ActiveState") == "active"
	}) {
		t.Fatalf("systemd did not restart the service: %s %s\n%s", r.unit("ActiveState"), r.unit("MainPID"), r.tail())
	}
	after := r.waitRunning(ids...)
	for _, id := range ids {
		if after[id].PID == before[id].PID {
			t.Fatalf("%s kept pid %d across the service's SIGKILL: nothing to tell", id, before[id].PID)
		}
	}
	d.waitNotification(30*time.Second, "service restarted", "3 agents were restarted with it: a01, a02, a03.")
	// Sent once, at low urgency, and nothing of a loss.
	restarted := 0
	for _, c := range monitoredNotices(t, monitor.output()) {
		switch {
		case strings.Contains(c.summary, "stopped"), strings.Contains(c.summary, "is back"):
			t.Errorf("the tray announced the restart as a loss: %s: %s", c.summary, c.body)
		case strings.Contains(c.summary, "service restarted"):
			restarted++
			if c.urgency != 0 {
				t.Errorf("the restart's notice has urgency %d, want 0 (low)", c.urgency)
			}
		}
	}
	if restarted != 1 {
		t.Errorf("%d notices of the restart, want 1", restarted)
	}
}

// monitoredNotices reads the Notify calls in what dbus-monitor printed:
// the summary, body and urgency of each.
func monitoredNotices(t *testing.T, out string) []notifyCall {
	t.Helper()
	var calls []notifyCall
	for _, block := range strings.Split(out, "method call ")[1:] {
		if !strings.Contains(block, "member=Notify") {
			continue
		}
		// The call's own arguments are indented by three spaces:
		// app name, icon, summary and body are its strings.
		var strs []string
		lines := strings.Split(block, "\n")
		c := notifyCall{urgency: 255}
		for i, line := range lines {
			if v, ok := strings.CutPrefix(line, `   string "`); ok {
				strs = append(strs, strings.TrimSuffix(v, `"`))
			}
			if strings.TrimSpace(line) == `string "urgency"` && i+1 < len(lines) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "variant"); ok {
					if n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(v), "byte ")); err == nil {
						c.urgency = byte(n)
					}
				}
			}
		}
		if len(strs) < 4 {
			t.Fatalf("a Notify call with %d strings, want 4:\n%s", len(strs), block)
		}
		c.summary, c.body = strs[2], strs[3]
		calls = append(calls, c)
	}
	return calls
}

// A service run from a shell is the person's, not the manager's:
// uninstalling the registration leaves it running with its agents, as
// the help says, and "service stop" then stops it, no registration
// needed.
func TestUninstallLeavesAServiceRunFromAShell(t *testing.T) {
	r := newLoginRig(t)
	m := r.marker
	r.must(true, "service", "install", "--no-start")
	shell := r.m.Command(r.exe, "service", "run")
	shell.Env = append(shell.Env, "PATH="+r.bin+":/usr/local/bin:/usr/bin:/bin")
	var out strings.Builder
	shell.Stdout, shell.Stderr = &out, &out
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = shell.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = shell.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = shell.Process.Kill()
			<-done
		}
	})
	rows := r.waitRunning("x")
	if res := r.must(true, "service", "status"); !strings.Contains(res.stdout, fmt.Sprintf("running (pid %d, not managed by", shell.Process.Pid)) {
		t.Errorf("service status with a shell's service: %q", res.stdout)
	}

	res := r.must(true, "service", "uninstall")
	t.Logf("uninstall said: %s", strings.TrimSpace(res.stdout))
	if _, err := os.Stat(filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service")); !os.IsNotExist(err) {
		t.Errorf("the unit is still there: %v", err)
	}
	if after, code := r.status(); code != 0 || after["x"].PID != rows["x"].PID {
		t.Errorf("after uninstall, the shell's service: status exit %d, x %+v (was pid %d)\n%s", code, after["x"], rows["x"].PID, out.String())
	}
	exactlyOnce(t, 0, map[string]int{m + "-x": 1})

	if res := r.must(true, "service", "stop"); !strings.Contains(res.stdout, "stopped") {
		t.Errorf("service stop of the shell's service said %q", res.stdout)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the shell's service still runs after service stop:\n%s", out.String())
	}
	exactlyOnce(t, 0, map[string]int{m + "-x": 0})
}
