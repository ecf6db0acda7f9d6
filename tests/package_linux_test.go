package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The .deb of make dist, installed for real (make dist-test runs these
// with TETHER_PACKAGE_DEB and TETHER_PACKAGE_VERSION; they skip without).

// packagedFiles are the files the .deb and the .rpm must install: the
// icons in every size of the application icon's (assets.AppIconSizes)
// and the SVG among them.
func packagedFiles() []string {
	files := []string{
		"/usr/bin/tether",
		"/usr/lib/systemd/user/tether.service",
		"/usr/share/applications/tether.desktop",
		"/usr/share/metainfo/tether.metainfo.xml",
		"/usr/share/icons/hicolor/scalable/apps/tether.svg",
		"/usr/share/man/man1/tether.1.gz",
		"/usr/share/bash-completion/completions/tether",
		"/usr/share/zsh/vendor-completions/_tether",
		"/usr/share/fish/vendor_completions.d/tether.fish",
		"/usr/share/doc/tether/copyright",
	}
	for _, n := range assets.AppIconSizes {
		files = append(files, fmt.Sprintf("/usr/share/icons/hicolor/%dx%d/apps/tether.png", n, n))
	}
	return files
}

// installDeb installs the .deb of TETHER_PACKAGE_DEB with apt-get, as a
// person would, and purges it when the test ends. It returns the version
// the binary must report.
func installDeb(t *testing.T) string {
	t.Helper()
	deb, version := os.Getenv("TETHER_PACKAGE_DEB"), os.Getenv("TETHER_PACKAGE_VERSION")
	if deb == "" || version == "" {
		t.Skip("TETHER_PACKAGE_DEB and TETHER_PACKAGE_VERSION are not set (make dist-test sets them)")
	}
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "installing a package needs root")
	}
	needTools(t, "apt-get", "dpkg")
	if out, err := exec.Command("dpkg", "-s", "tether").CombinedOutput(); err == nil {
		t.Fatalf("tether is installed already; this test installs and purges it:\n%s", out)
	}
	apt := func(args ...string) {
		t.Helper()
		cmd := exec.Command("apt-get", append([]string{"-y", "-q", "--no-install-recommends"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		if exec.Command("dpkg", "-s", "tether").Run() == nil {
			apt("purge", "tether")
		}
	})
	apt("install", deb)
	return version
}

// apt-get install puts every file where the distributions expect it,
// dpkg -L lists them, and nothing is started or enabled for anyone.
func TestPackageInstallsEveryFileAndStartsNothing(t *testing.T) {
	version := installDeb(t)
	out, err := exec.Command("dpkg", "-L", "tether").Output()
	if err != nil {
		t.Fatal(err)
	}
	listed := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, f := range packagedFiles() {
		if !slices.Contains(listed, f) {
			t.Errorf("dpkg -L does not list %s", f)
		}
		if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range listed {
		if strings.HasPrefix(f, "/etc") {
			t.Errorf("the package installs %s: nothing under /etc", f)
		}
	}
	for _, p := range []string{"/etc/systemd/user/default.target.wants/tether.service", "/etc/xdg/autostart/tether.desktop"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists: the package enabled something", p)
		}
	}
	if pids := runningPackaged(); len(pids) > 0 {
		t.Errorf("the packaged tether runs after the install: pids %v", pids)
	}
	v, err := exec.Command("/usr/bin/tether", "version").Output()
	if err != nil || !strings.HasPrefix(string(v), "tether "+version+"\ncommit ") {
		t.Errorf("tether version: %q, %v", v, err)
	}
}

// Under a real systemd --user, `tether service install` of the packaged
// binary enables the packaged unit with a drop-in of the user's own (the
// PATH with ~/.local/bin) instead of a second copy of the unit; the
// service starts, answers with the package's version and runs an agent
// whose command is in ~/.local/bin.
func TestPackageServiceUsesThePackagedUnit(t *testing.T) {
	version := installDeb(t)
	r := newLoginRig(t)
	r.exe = "/usr/bin/tether"
	local := filepath.Join(r.m.Home, ".local", "bin")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(r.bin, "tether-test-agent"), filepath.Join(local, "tether-test-agent")); err != nil {
		t.Fatal(err)
	}
	r.bin = local
	r.writeConfig(1)
	if err := chownAll(filepath.Join(r.m.Home, ".local"), r.m.UID, r.m.GID); err != nil {
		t.Fatal(err)
	}

	r.must(true, "service", "install")
	own := filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service")
	if _, err := os.Lstat(own); err == nil {
		t.Errorf("service install wrote %s beside the packaged unit", own)
	}
	dropIn := filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service.d", "tether.conf")
	if got := r.unit("FragmentPath"); got != "/usr/lib/systemd/user/tether.service" {
		t.Errorf("the unit runs from %s, want the packaged one", got)
	}
	if got := r.unit("DropInPaths"); !strings.Contains(got, dropIn) {
		t.Errorf("DropInPaths=%s, want %s", got, dropIn)
	}
	if got := r.unit("UnitFileState"); got != "enabled" {
		t.Errorf("UnitFileState=%s", got)
	}
	if env := r.unit("Environment"); !strings.Contains(env, "PATH="+local+":") {
		t.Errorf("Environment=%s, want the PATH with %s", env, local)
	}
	r.waitRunning("x")
	exactlyOnce(t, 0, map[string]int{r.marker + "-x": 1})
	// The service says the version, commit and date its binary's
	// `tether version` says (make dist stamps them: make dist-test checks
	// them against the commit), in status --json and under the table.
	v, err := exec.Command("/usr/bin/tether", "version").Output()
	lines := strings.Split(string(v), "\n")
	commit, date, ok := strings.Cut(strings.TrimPrefix(lines[min(1, len(lines)-1)], "commit "), " of ")
	if err != nil || !ok || len(commit) != 40 || len(date) != len("2006-01-02") {
		t.Fatalf("tether version: %q, %v: want its commit and date", v, err)
	}
	res := r.must(false, "status", "--json")
	var st struct {
		Service struct{ Version, Commit, Date string } `json:"service"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Service.Version != version || st.Service.Commit != commit || st.Service.Date != date {
		t.Errorf("status --json service %+v (%v), want version %q, commit %q, date %q", st.Service, err, version, commit, date)
	}
	line := fmt.Sprintf("service: tether %s, commit %s of %s, pid %s\n", version, commit, date, r.unit("MainPID"))
	if res := r.must(false, "status"); !strings.HasSuffix(res.stdout, line) {
		t.Errorf("status:\n%s\nwant it to end with %q", res.stdout, line)
	}

	r.must(false, "service", "uninstall")
	if _, err := os.Lstat(dropIn); err == nil {
		t.Errorf("uninstall left %s", dropIn)
	}
	if _, err := os.Stat("/usr/lib/systemd/user/tether.service"); err != nil {
		t.Errorf("uninstall touched the packaged unit: %v", err)
	}
}

// appMenuEntry is the packaged desktop entry a person's app menu lists.
const appMenuEntry = "/usr/share/applications/tether.desktop"

// openFromAppMenu opens the packaged app-menu entry as a desktop's
// launcher does, with GLib (gio launch, which reads the entry's TryExec
// and Exec), as the desktop's user; output is a file that gets what the
// programs it starts print (a file, not a pipe: they outlive gio).
func openFromAppMenu(t *testing.T, d *desktop, output string) {
	t.Helper()
	needTools(t, "gio")
	f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := d.command("gio", "launch", appMenuEntry)
	cmd.Stdout, cmd.Stderr = f, f
	if err := runBoundedErr(cmd, time.Minute); err != nil {
		b, _ := os.ReadFile(output)
		t.Fatalf("gio launch %s: %v\n%s", appMenuEntry, err, b)
	}
}

// packagedTray waits until a tray of /usr/bin/tether, run by the
// desktop's user, has registered its item with the desktop's tray host,
// and returns its pid.
func packagedTray(t *testing.T, d *desktop, within time.Duration, output string) int {
	t.Helper()
	pid := 0
	if !testproc.UntilEvery(within, 20*time.Millisecond, func() bool {
		for _, it := range d.items() {
			var owner uint32
			if d.conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, it.service).Store(&owner) != nil {
				continue
			}
			exe, _ := os.Readlink("/proc/" + strconv.Itoa(int(owner)) + "/exe")
			if exe == "/usr/bin/tether" && strings.HasSuffix(cmdline(int(owner)), "\x00tray\x00") {
				pid = int(owner)
				return true
			}
		}
		return false
	}) {
		b, _ := os.ReadFile(output)
		t.Fatalf("no tray of /usr/bin/tether registered with the panel within %v; registered: %+v\nwhat was launched said:\n%s", within, d.items(), b)
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil || int(st.Uid) != d.user.UID {
		t.Errorf("the tray (pid %d) runs as uid %d (%v), want the session's user %d", pid, st.Uid, err, d.user.UID)
	}
	return pid
}

// stopTray ends the tray pid as its session's end does (SIGTERM), and
// waits until it has exited (reaping it: the launcher that started it
// exited first, so this process, a subreaper, adopted it).
func stopTray(t *testing.T, pid int) {
	t.Helper()
	_ = unix.Kill(pid, unix.SIGTERM)
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		p, err := punix.Stat(pid)
		if err != nil {
			return true
		}
		if p.Zombie() && p.PPid == os.Getpid() {
			var ws unix.WaitStatus
			got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			return got == pid
		}
		return p.Zombie()
	}) {
		t.Errorf("the tray (pid %d) did not exit within 10 s of SIGTERM", pid)
	}
}

// The app-menu entry starts the tray: opened as a desktop's launcher
// opens it, by the session's user, it runs the package's tray, which
// registers with the panel's tray host; opened again, while that tray
// runs, it starts no second one, and the second says which one runs.
func TestPackageAppMenuEntryStartsTheTray(t *testing.T) {
	installDeb(t)
	r := newLoginRig(t)
	r.exe = "/usr/bin/tether"
	d := newDesktopWith(t, deskOptions{panel: true, user: r.m})
	output := filepath.Join(t.TempDir(), "launched.log")
	openFromAppMenu(t, d, output)
	pid := packagedTray(t, d, 30*time.Second, output)
	t.Logf("gio launch %s: the tray of /usr/bin/tether (pid %d) registered with the panel", appMenuEntry, pid)

	openFromAppMenu(t, d, output)
	said := fmt.Sprintf("already runs on this display (pid %d); not starting another", pid)
	waitFileContains(t, output, said)
	if items := d.items(); len(items) != 1 {
		t.Errorf("after a second opening the panel has %d items, want the one tray's: %+v", len(items), items)
	}
	if _, ok := d.itemOf(pid); !ok {
		t.Errorf("the first tray's item is gone after a second opening")
	}
	stopTray(t, pid)
}

// packagedExe is the binary the packages install.
const packagedExe = "/usr/bin/tether"

// runningPackaged returns the processes that run /usr/bin/tether.
func runningPackaged() []int {
	var pids []int
	for pid := range procsWith("") {
		if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); strings.HasPrefix(exe, "/usr/bin/tether") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeAgents writes n agents (a01, a02, ...) of tether-test-agent to
// the rig's user's config.
func (r *loginRig) writeAgents(n int) []string {
	r.t.Helper()
	var b strings.Builder
	var ids []string
	b.WriteString("agents:\n")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("a%02d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  - id: %s\n    command: [tether-test-agent, %s-%s]\n    autostart: true\n    stop_timeout: 1s\n", id, r.marker, id)
	}
	cfg := filepath.Join(r.m.Home, ".config", "tether", "agents.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chown(cfg, r.m.UID, r.m.GID); err != nil {
		r.t.Fatal(err)
	}
	return ids
}

// serviceVersion is the running service's version, as status --json
// gives it ("" when it does not answer).
func (r *loginRig) serviceVersion() string {
	res := r.tether(false, "status", "--json")
	var st struct {
		Service struct{ Version string } `json:"service"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &st) != nil {
		return ""
	}
	return st.Service.Version
}

// A newer .deb installed over a running service with 20 agents is a hot
// upgrade: the service becomes the new version by itself (the package's
// postinst asks it to), no agent is restarted (the same pids), no
// request is refused, and the tray the user opened from the app menu
// says it was updated, in a notification of the desktop's notification
// server. Then apt-get remove stops the service and its agents before
// the binary goes, and it and purge leave the user's config, drop-in,
// state and logs alone.
func TestPackageUpgradeIsHotAndRemoveStops(t *testing.T) {
	next, nextVersion := os.Getenv("TETHER_PACKAGE_DEB_NEXT"), os.Getenv("TETHER_PACKAGE_VERSION_NEXT")
	if next == "" || nextVersion == "" {
		t.Skip("TETHER_PACKAGE_DEB_NEXT and TETHER_PACKAGE_VERSION_NEXT are not set (make dist-test sets them)")
	}
	version := installDeb(t)
	r := newLoginRig(t)
	r.exe = "/usr/bin/tether"
	ids := r.writeAgents(20)
	r.must(true, "service", "install")
	before := r.waitRunning(ids...)
	if v := r.serviceVersion(); v != version {
		t.Fatalf("service version %q, want %q", v, version)
	}
	// The user's tray, from the app menu, showing the service's agents.
	d := newDesktopWith(t, deskOptions{panel: true, notifier: "dunst", user: r.m})
	output := filepath.Join(t.TempDir(), "launched.log")
	openFromAppMenu(t, d, output)
	tray := packagedTray(t, d, 30*time.Second, output)
	d.waitMenu(d.waitItem(tray, 10*time.Second), "20 running", func(n menuNode) bool {
		return n.children[0].label == "20 running"
	})

	hotUpgrade(t, r, ids, before, exec.Command("dpkg", "-i", next), nextVersion)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(output)
			t.Logf("the tray's output:\n%s", b)
		}
	})
	n := d.waitNotification(10*time.Second, "tether: updated", "updated to tether "+nextVersion+" (from "+version+")")
	t.Logf("the tray said: %s", n)
	if _, ok := d.itemOf(tray); !ok {
		t.Errorf("the tray's item is gone after the upgrade")
	}
	// The tray is a thin client of the service; the removal below is
	// about the service.
	stopTray(t, tray)

	// apt-get remove: the service and every agent stop, cleanly.
	cmd := exec.Command("apt-get", "-y", "-q", "remove", "tether")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apt-get remove: %v\n%s", err, out)
	}
	if pids := runningPackaged(); len(pids) > 0 {
		t.Errorf("the packaged tether still runs after its removal: pids %v", pids)
	}
	if left := procsWith(r.marker); len(left) > 0 {
		t.Errorf("agents left running after the removal: %v", left)
	}
	// The package has no conffiles: remove left nothing for apt-get
	// purge to find, and dpkg --purge makes sure.
	r.requireUserData(ids, "apt-get remove")
	if out, err := exec.Command("dpkg", "--purge", "tether").CombinedOutput(); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	r.requireUserData(ids, "dpkg --purge")
}

// requireUserData fails the test unless what the user's tether wrote is
// all there after what (a package's removal): the config, the drop-in of
// the user's unit, the state directory with its state file, and the
// log file of each of ids, not empty.
func (r *loginRig) requireUserData(ids []string, what string) {
	r.t.Helper()
	state := filepath.Join(r.m.Home, ".local", "state", "tether", "default")
	files := map[string]string{
		"config":     filepath.Join(r.m.Home, ".config", "tether", "agents.yaml"),
		"drop-in":    filepath.Join(r.m.Home, ".config", "systemd", "user", "tether.service.d", "tether.conf"),
		"state file": filepath.Join(state, "state.json"),
	}
	for _, id := range ids {
		files["log of "+id] = filepath.Join(state, "logs", id+".log")
	}
	var lost []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fi, err := os.Stat(files[name])
		switch {
		case err != nil:
			lost = append(lost, fmt.Sprintf("%s: %v", name, err))
		case !fi.Mode().IsRegular() || fi.Size() == 0:
			lost = append(lost, fmt.Sprintf("%s: %s is %v, %d bytes", name, files[name], fi.Mode(), fi.Size()))
		}
	}
	if len(lost) > 0 {
		r.t.Errorf("after %s, the user's data is not all there:\n%s", what, strings.Join(lost, "\n"))
	}
}

// hotUpgrade runs upgrade, a package tool that lands a newer package of
// tether, while the rig's service runs the agents ids (their rows before
// it in before), with status requests all along, as a client would make
// them. The package lands when the tool puts the new /usr/bin/tether in
// place of the old one (its scripts, which ask the service to upgrade,
// and the triggers run after). The service must say nextVersion within
// 5 s of the package landing, in the same process, with no agent
// restarted (the same pids) and no request refused.
func hotUpgrade(t *testing.T, r *loginRig, ids []string, before map[string]statusRow, upgrade *exec.Cmd, nextVersion string) {
	t.Helper()
	servicePID := r.unit("MainPID")
	was, err := os.Stat(packagedExe)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu             sync.Mutex
		landed, served time.Time // when the binary was replaced; when an answer first said nextVersion
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The landing: the first moment /usr/bin/tether is another file.
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if fi, err := os.Stat(packagedExe); err == nil && !os.SameFile(fi, was) {
				mu.Lock()
				landed = time.Now()
				mu.Unlock()
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	// Requests all along the upgrade, as a client would make them; the
	// first answer with the new version is when it served (at the
	// latest).
	var asked, refused int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			asked++
			res := r.tether(false, "status", "--json")
			if res.code != 0 {
				refused++
				t.Logf("status refused: exit %d: %s", res.code, res.stderr)
				continue
			}
			var st struct {
				Service struct{ Version string } `json:"service"`
			}
			if json.Unmarshal([]byte(res.stdout), &st) == nil && st.Service.Version == nextVersion {
				mu.Lock()
				if served.IsZero() {
					served = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	stopAll := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopAll()
	began := time.Now()
	tool := strings.Join(upgrade.Args, " ")
	out, err := upgrade.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, out)
	}
	took := time.Since(began)
	t.Logf("%s:\n%s", tool, out)
	mu.Lock()
	landedAt := landed
	mu.Unlock()
	if landedAt.IsZero() {
		t.Fatalf("%s did not replace %s", tool, packagedExe)
	}
	testproc.UntilEvery(time.Until(landedAt.Add(5*time.Second)), 20*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !served.IsZero()
	})
	stopAll()
	if served.IsZero() || served.Sub(landedAt) > 5*time.Second {
		t.Fatalf("the service is not %s 5 s after the package landed (%v into %s)\n%s", nextVersion, landedAt.Sub(began).Round(time.Millisecond), tool, r.tail())
	}
	after := r.waitRunning(ids...)
	restarted := 0
	for _, id := range ids {
		if after[id].PID != before[id].PID {
			restarted++
		}
	}
	t.Logf("package upgrade with %d agents: %s took %v; the package landed %v into it and the new version served %v after that; agents restarted %d; requests refused %d of %d",
		len(ids), upgrade.Args[0], took.Round(time.Millisecond), landedAt.Sub(began).Round(time.Millisecond), served.Sub(landedAt).Round(time.Millisecond), restarted, refused, asked)
	if restarted != 0 || refused != 0 {
		t.Errorf("%d agents restarted, %d requests refused; want 0 and 0", restarted, refused)
	}
	if pid := r.unit("MainPID"); pid != servicePID {
		t.Errorf("the service's pid went from %s to %s", servicePID, pid)
	}
}

// The tray at login from the package: Start at login writes an entry
// that runs /usr/bin/tether, and a systemd session's login starts that
// tray through systemd's generator (TestTrayStartsAtLoginUnderSystemd
// with the package's binary).
func TestPackageTrayStartsAtLogin(t *testing.T) {
	installDeb(t)
	needGenerator(t)
	r := newLoginRig(t)
	r.exe = "/usr/bin/tether"
	trayStartsAtLogin(t, r)
}

// installRPM installs the .rpm of TETHER_PACKAGE_RPM onto this machine
// with rpm itself, into an rpm database of the test's own (this Debian
// machine's packages are dpkg's: rpm -i --nodeps, as on a Debian
// machine rpm must be told), and erases it when the test ends,
// removing the directories it made. It returns the database's path.
func installRPM(t *testing.T, pkg string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "installing a package needs root")
	}
	needTools(t, "rpm", "dpkg")
	if out, err := exec.Command("dpkg", "-s", "tether").CombinedOutput(); err == nil {
		t.Fatalf("tether is installed by dpkg; the .rpm's files would replace its:\n%s", out)
	}
	if _, err := os.Lstat("/usr/bin/tether"); err == nil {
		t.Fatal("/usr/bin/tether exists: the .rpm would replace it")
	}
	list, err := exec.Command("rpm", "-qlp", pkg).Output()
	if err != nil {
		t.Fatalf("rpm -qlp %s: %v", pkg, err)
	}
	var made []string // directories the package will make, deepest first
	for _, f := range strings.Fields(string(list)) {
		for d := filepath.Dir(f); d != "/"; d = filepath.Dir(d) {
			if _, err := os.Lstat(d); err == nil || slices.Contains(made, d) {
				break
			}
			made = append(made, d)
		}
	}
	slices.SortFunc(made, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	db := t.TempDir()
	t.Cleanup(func() {
		if exec.Command("rpm", "-q", "--dbpath", db, "tether").Run() == nil {
			if out, err := exec.Command("rpm", "-e", "--nodeps", "--dbpath", db, "tether").CombinedOutput(); err != nil {
				t.Errorf("rpm -e tether: %v\n%s", err, out)
			}
		}
		for _, d := range made {
			os.Remove(d) // only where the package left it empty
		}
	})
	if out, err := exec.Command("rpm", "-i", "--nodeps", "--dbpath", db, pkg).CombinedOutput(); err != nil {
		t.Fatalf("rpm -i %s: %v\n%s", pkg, err, out)
	}
	return db
}

// The .rpm's upgrade is as hot as the .deb's: rpm -U of a newer .rpm
// over a running service with 20 agents makes it the new version by
// itself, the same pids, no request refused (the package's %post with
// 2, "a second package installed"); then rpm -e stops the service and
// its agents before the binary goes (%preun with 0) and leaves the
// user's config, drop-in, state and logs.
func TestPackageRPMUpgradeIsHotAndEraseStops(t *testing.T) {
	pkg, next := os.Getenv("TETHER_PACKAGE_RPM"), os.Getenv("TETHER_PACKAGE_RPM_NEXT")
	version, nextVersion := os.Getenv("TETHER_PACKAGE_VERSION"), os.Getenv("TETHER_PACKAGE_VERSION_NEXT")
	if pkg == "" || next == "" || version == "" || nextVersion == "" {
		t.Skip("TETHER_PACKAGE_RPM, TETHER_PACKAGE_RPM_NEXT and their versions are not set (make dist-test sets them)")
	}
	out, err := exec.Command("rpm", "-qlp", pkg).Output()
	if err != nil {
		t.Fatalf("rpm -qlp %s: %v", pkg, err)
	}
	listed := strings.Fields(string(out))
	for _, f := range packagedFiles() {
		if !slices.Contains(listed, f) {
			t.Errorf("rpm -qlp does not list %s", f)
		}
	}
	db := installRPM(t, pkg)
	r := newLoginRig(t)
	r.exe = "/usr/bin/tether"
	ids := r.writeAgents(20)
	r.must(true, "service", "install")
	if got := r.unit("FragmentPath"); got != "/usr/lib/systemd/user/tether.service" {
		t.Errorf("the unit runs from %s, want the packaged one", got)
	}
	before := r.waitRunning(ids...)
	if v := r.serviceVersion(); v != version {
		t.Fatalf("service version %q, want %q", v, version)
	}
	hotUpgrade(t, r, ids, before, exec.Command("rpm", "-U", "--nodeps", "--dbpath", db, next), nextVersion)

	if out, err := exec.Command("rpm", "-e", "--nodeps", "--dbpath", db, "tether").CombinedOutput(); err != nil {
		t.Fatalf("rpm -e: %v\n%s", err, out)
	}
	if pids := runningPackaged(); len(pids) > 0 {
		t.Errorf("the packaged tether still runs after its removal: pids %v", pids)
	}
	if left := procsWith(r.marker); len(left) > 0 {
		t.Errorf("agents left running after the removal: %v", left)
	}
	if _, err := os.Stat("/usr/bin/tether"); err == nil {
		t.Error("rpm -e left /usr/bin/tether")
	}
	r.requireUserData(ids, "rpm -e")
}
