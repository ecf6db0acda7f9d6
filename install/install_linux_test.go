package install

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
)

// home makes a temporary home with an executable tether in a directory
// whose name has a space, and Options that use only it.
func home(t *testing.T, profile string) (string, Options) {
	t.Helper()
	root := testdir.Temp(t)
	h := filepath.Join(root, "home")
	bin := filepath.Join(root, "my apps")
	for _, d := range []string{h, bin} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(bin, "tether")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return h, Options{Executable: exe, Profile: profile, Home: h, Env: map[string]string{}}
}

// noSystemd makes this test see a machine where systemd is not init,
// whatever the machine running it is.
func noSystemd(t *testing.T) {
	old := systemdBootDir
	systemdBootDir = filepath.Join(testdir.Temp(t), "no-such-dir")
	t.Cleanup(func() { systemdBootDir = old })
}

// The real machine: no systemd as PID 1 here, so Install must refuse
// before writing anything. Skipped where a systemd user manager answers.
func TestInstallWithoutServiceManagerHere(t *testing.T) {
	if probeUserManager() == nil {
		t.Skip("a systemd user manager is reachable on this machine")
	}
	h, o := home(t, "")
	cfg := filepath.Join(h, "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	o.Env["XDG_CONFIG_HOME"] = cfg
	before := snapshot(t, h)
	r, err := Install(o)
	if !errors.Is(err, ErrNoServiceManager) {
		t.Fatalf("Install = %+v, %v; want ErrNoServiceManager", r, err)
	}
	t.Logf("Install: %v", err)
	if after := snapshot(t, h); !slices.Equal(before, after) {
		t.Errorf("Install wrote something: %q -> %q", before, after)
	}
	if err := Start(o); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Start = %v, want ErrNotInstalled", err)
	}
	st, err := Status(o)
	if err != nil || st.Installed || st.State != StateUnknown || st.Detail == "" {
		t.Errorf("Status = %+v, %v; want not installed, unknown, with a reason", st, err)
	}
	// Print still works.
	files, err := Plan(o)
	if err != nil || len(files) != 1 || !strings.HasPrefix(files[0].Path, cfg+"/systemd/user/") {
		t.Errorf("Plan = %v, %v", files, err)
	}
}

func TestInstallWithoutSystemd(t *testing.T) {
	noSystemd(t)
	h, o := home(t, "work")
	before := snapshot(t, h)
	_, err := Install(o)
	if !errors.Is(err, ErrNoServiceManager) || !strings.Contains(err.Error(), "not the init system") {
		t.Fatalf("Install: %v; want ErrNoServiceManager saying systemd is not init", err)
	}
	if after := snapshot(t, h); !slices.Equal(before, after) {
		t.Errorf("Install wrote something: %q -> %q", before, after)
	}
}

func TestUninstallNothingInstalled(t *testing.T) {
	noSystemd(t)
	h, o := home(t, "")
	before := snapshot(t, h)
	r, err := Uninstall(o)
	if err != nil || r.Changed || len(r.Paths) != 0 || !strings.Contains(r.Message, "not installed") {
		t.Errorf("Uninstall = %+v, %v; want a no-op saying nothing is installed", r, err)
	}
	r, err = UninstallTrayAutostart(o)
	if err != nil || r.Changed || !strings.Contains(r.Message, "not installed") {
		t.Errorf("UninstallTrayAutostart = %+v, %v", r, err)
	}
	if after := snapshot(t, h); !slices.Equal(before, after) {
		t.Errorf("Uninstall touched the home: %q -> %q", before, after)
	}
}

// Without systemd as init nothing can be running a leftover unit, so
// Uninstall removes it and its enable link.
func TestUninstallLeftoverWithoutSystemd(t *testing.T) {
	noSystemd(t)
	_, o := home(t, "")
	files, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	unit := files[0].Path
	link := filepath.Join(filepath.Dir(unit), "default.target.wants", filepath.Base(unit))
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, files[0].Content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(unit, link); err != nil {
		t.Fatal(err)
	}
	r, err := Uninstall(o)
	if err != nil || !r.Changed || len(r.Paths) != 2 {
		t.Fatalf("Uninstall = %+v, %v", r, err)
	}
	for _, p := range []string{unit, link} {
		if ok, _ := lexists(p); ok {
			t.Errorf("%s is still there", p)
		}
	}
}

func TestTrayAutostart(t *testing.T) {
	noSystemd(t) // needs no service manager
	h, o := home(t, "")
	plan, err := PlanTrayAutostart(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(h, ".config", "autostart", "tether.desktop"); plan[0].Path != want {
		t.Fatalf("plan path %s, want %s", plan[0].Path, want)
	}
	r, err := InstallTrayAutostart(o)
	if err != nil || !r.Changed {
		t.Fatalf("InstallTrayAutostart = %+v, %v", r, err)
	}
	got, err := os.ReadFile(plan[0].Path)
	if err != nil || !bytes.Equal(got, plan[0].Content) {
		t.Errorf("wrote %q (%v), planned %q", got, err, plan[0].Content)
	}
	if exec := keyValue(t, got, "Exec"); exec != `"`+o.Executable+`" tray --at-login` {
		t.Errorf("Exec=%s", exec)
	}
	if ok, err := TrayAutostartInstalled(o); !ok || err != nil {
		t.Errorf("TrayAutostartInstalled = %v, %v", ok, err)
	}
	if r, err := InstallTrayAutostart(o); err != nil || r.Changed {
		t.Errorf("second install = %+v, %v; want unchanged", r, err)
	}
	if r, err := UninstallTrayAutostart(o); err != nil || !r.Changed {
		t.Errorf("UninstallTrayAutostart = %+v, %v", r, err)
	}
	if ok, _ := TrayAutostartInstalled(o); ok {
		t.Error("still installed")
	}
}

// ---- a fake systemd: a booted-looking directory and a systemctl on PATH
// that logs its arguments and answers as told by FAKE_* variables. ----

const fakeSystemctl = `#!/bin/sh
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
for a in "$@"; do
	case "$a" in
	-*) ;;
	*) if [ -z "$verb" ]; then verb="$a"; else unit="$a"; fi ;;
	esac
done
case " $FAKE_SYSTEMCTL_FAIL " in
*" $verb "*) echo "fake systemctl: $verb refused" >&2; exit 1 ;;
esac
case "$verb" in
show)
	if [ -n "$unit" ]; then printf 'LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\n'; else echo Version=255; fi ;;
is-active)
	echo "${FAKE_SYSTEMCTL_ACTIVE:-inactive}"
	[ "${FAKE_SYSTEMCTL_ACTIVE:-inactive}" = active ] || exit 3 ;;
enable)
	mkdir -p "$FAKE_UNIT_DIR/default.target.wants" && ln -sf "$FAKE_UNIT_DIR/$unit" "$FAKE_UNIT_DIR/default.target.wants/$unit" ;;
disable)
	rm -f "$FAKE_UNIT_DIR/default.target.wants/$unit" ;;
esac
exit 0
`

type fakeSystemd struct {
	log string
}

func newFakeSystemd(t *testing.T, unitDir string) *fakeSystemd {
	dir := testdir.Temp(t)
	booted := filepath.Join(dir, "run-systemd-system")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{booted, bin} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "systemctl"), []byte(fakeSystemctl), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeSystemd{log: filepath.Join(dir, "log")}
	old := systemdBootDir
	systemdBootDir = booted
	t.Cleanup(func() { systemdBootDir = old })
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_SYSTEMCTL_LOG", f.log)
	t.Setenv("FAKE_UNIT_DIR", unitDir)
	t.Setenv("FAKE_SYSTEMCTL_FAIL", "")
	t.Setenv("FAKE_SYSTEMCTL_ACTIVE", "")
	return f
}

// calls returns the systemctl calls since the last one and forgets them.
func (f *fakeSystemd) calls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(f.log)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestLifecycleWithFakeSystemd(t *testing.T) {
	h, o := home(t, "work")
	cfg := filepath.Join(h, "xdg")
	o.Env["XDG_CONFIG_HOME"] = cfg
	unitDir := filepath.Join(cfg, "systemd", "user")
	fake := newFakeSystemd(t, unitDir)
	unit := filepath.Join(unitDir, "tether-work.service")
	link := filepath.Join(unitDir, "default.target.wants", "tether-work.service")

	plan, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Install(o)
	if err != nil || !r.Changed || !slices.Equal(r.Paths, []string{unit}) {
		t.Fatalf("Install = %+v, %v", r, err)
	}
	t.Log(r.Message)
	got, err := os.ReadFile(unit)
	if err != nil || !bytes.Equal(got, plan[0].Content) {
		t.Fatalf("installed %q (%v), planned %q", got, err, plan[0].Content)
	}
	if fi, _ := os.Stat(unit); fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode %v", fi.Mode().Perm())
	}
	requireLines(t, got, "ExecStart=\""+o.Executable+"\" --profile work service run", "WantedBy=default.target")
	calls := fake.calls(t)
	if want := []string{"--user show --property=Version", "--user daemon-reload", "--user enable tether-work.service", "--user is-active tether-work.service"}; !slices.Equal(calls, want) {
		t.Errorf("systemctl calls %q, want %q", calls, want)
	}
	if !isSymlink(link) {
		t.Error("not enabled")
	}

	if r, err := Install(o); err != nil || r.Changed || !strings.Contains(r.Message, "already") {
		t.Errorf("second Install = %+v, %v; want unchanged", r, err)
	}
	fake.calls(t)

	for active, want := range map[string]StatusInfo{
		"active":   {State: StateRunning},
		"inactive": {State: StateStopped},
		"failed":   {State: StateStopped, Detail: "failed (see `journalctl --user -u tether-work.service`)"},
	} {
		t.Setenv("FAKE_SYSTEMCTL_ACTIVE", active)
		st, err := Status(o)
		if err != nil || !st.Installed || !st.Current || st.State != want.State || st.Detail != want.Detail || st.Path != unit || st.Name != "tether-work.service" {
			t.Errorf("is-active %s: Status = %+v, %v", active, st, err)
		}
	}
	fake.calls(t)

	// Start and Stop go through kardianos, which puts --user after the verb.
	if err := Start(o); err != nil {
		t.Errorf("Start: %v", err)
	}
	if err := Stop(o); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if calls := fake.calls(t); !slices.Contains(calls, "start --user tether-work.service") || !slices.Contains(calls, "stop --user tether-work.service") {
		t.Errorf("systemctl calls %q lack kardianos's start and stop", calls)
	}

	t.Setenv("FAKE_SYSTEMCTL_FAIL", "start")
	if err := Start(o); err == nil || !strings.Contains(err.Error(), "ActiveState=failed") {
		t.Errorf("failed Start: %v; want systemd's view of the unit", err)
	}
	t.Setenv("FAKE_SYSTEMCTL_FAIL", "")
	fake.calls(t)

	// The binary moved: Status says the unit is stale.
	o2 := o
	o2.Executable = filepath.Join(filepath.Dir(o.Executable), "..", "elsewhere", "tether")
	if st, _ := Status(o2); !st.Installed || st.Current {
		t.Errorf("Status with another executable = %+v; want installed, not current", st)
	}
	fake.calls(t)

	// Disable stops nothing and keeps the unit; Install enables it again.
	r, err = Disable(o)
	if err != nil || !r.Changed || !strings.Contains(r.Message, "no longer starts at login") {
		t.Errorf("Disable = %+v, %v", r, err)
	}
	if calls := fake.calls(t); !slices.Equal(calls, []string{"--user show --property=Version", "--user disable tether-work.service"}) {
		t.Errorf("systemctl calls of Disable %q: no --now, nothing stopped", calls)
	}
	if st, _ := Status(o); !st.Installed || st.Enabled || isSymlink(link) {
		t.Errorf("after Disable: Status %+v, link %v; want installed, not enabled", st, isSymlink(link))
	}
	if r, err := Disable(o); err != nil || r.Changed {
		t.Errorf("second Disable = %+v, %v", r, err)
	}
	if r, err := Install(o); err != nil || !r.Changed || !isSymlink(link) {
		t.Errorf("Install after Disable = %+v, %v; want enabled again", r, err)
	}
	if st, _ := Status(o); !st.Enabled {
		t.Errorf("after Install: %+v, want enabled", st)
	}
	if s, ok, err := Installed(o); !ok || err != nil || s.StopTimeout != DefaultStopTimeout {
		t.Errorf("Installed = %+v, %v, %v", s, ok, err)
	}
	fake.calls(t)

	r, err = Uninstall(o)
	if err != nil || !r.Changed || !slices.Equal(r.Paths, []string{unit}) {
		t.Errorf("Uninstall = %+v, %v", r, err)
	}
	calls = fake.calls(t)
	if want := []string{"--user show --property=Version", "--user disable --now tether-work.service", "--user daemon-reload"}; !slices.Equal(calls, want) {
		t.Errorf("systemctl calls %q, want %q", calls, want)
	}
	for _, p := range []string{unit, link} {
		if ok, _ := lexists(p); ok {
			t.Errorf("%s is still there", p)
		}
	}
	if r, err := Uninstall(o); err != nil || r.Changed {
		t.Errorf("second Uninstall = %+v, %v", r, err)
	}
	if err := Stop(o); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Stop after Uninstall: %v", err)
	}
}

// A failure after the unit was written rolls everything back: the unit,
// the directories created for it, or the previous unit's content.
func TestInstallRollsBack(t *testing.T) {
	h, o := home(t, "")
	cfg := filepath.Join(h, "xdg")
	o.Env["XDG_CONFIG_HOME"] = cfg
	unitDir := filepath.Join(cfg, "systemd", "user")
	fake := newFakeSystemd(t, unitDir)
	before := snapshot(t, h)

	for _, verb := range []string{"enable", "daemon-reload"} {
		t.Setenv("FAKE_SYSTEMCTL_FAIL", verb)
		_, err := Install(o)
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "fake systemctl: "+verb+" refused") {
			t.Errorf("%s fails: Install error %v; want the CommandError with systemctl's words", verb, err)
		}
		if after := snapshot(t, h); !slices.Equal(before, after) {
			t.Errorf("%s fails: left behind %q", verb, after)
		}
	}
	fake.calls(t)

	// An older unit is restored, not removed.
	if err := os.MkdirAll(unitDir, 0o700); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(unitDir, "tether.service")
	old := []byte("[Service]\nExecStart=/old/tether service run\n")
	if err := os.WriteFile(unit, old, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_SYSTEMCTL_FAIL", "enable")
	if _, err := Install(o); err == nil {
		t.Fatal("Install succeeded")
	}
	if got, _ := os.ReadFile(unit); !bytes.Equal(got, old) {
		t.Errorf("old unit not restored: %q", got)
	}
	// The manager is told to forget the content it was given.
	if calls := fake.calls(t); calls[len(calls)-1] != "--user daemon-reload" {
		t.Errorf("no daemon-reload after rollback: %q", calls)
	}
}

// With systemd as init but no user manager answering, Install and
// Uninstall refuse and leave everything as it was.
func TestUserManagerUnreachable(t *testing.T) {
	h, o := home(t, "")
	unitDir := filepath.Join(h, ".config", "systemd", "user")
	newFakeSystemd(t, unitDir)
	t.Setenv("FAKE_SYSTEMCTL_FAIL", "show")
	before := snapshot(t, h)
	_, err := Install(o)
	if !errors.Is(err, ErrNoServiceManager) || !strings.Contains(err.Error(), "fake systemctl: show refused") {
		t.Errorf("Install: %v", err)
	}
	if after := snapshot(t, h); !slices.Equal(before, after) {
		t.Errorf("left behind %q", after)
	}

	files, _ := Plan(o)
	if err := os.MkdirAll(unitDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0].Path, files[0].Content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(o); !errors.Is(err, ErrNoServiceManager) {
		t.Errorf("Uninstall: %v", err)
	}
	if ok, _ := lexists(files[0].Path); !ok {
		t.Error("Uninstall removed a unit it could not stop")
	}
	st, err := Status(o)
	if err != nil || !st.Installed || !st.Current || st.State != StateUnknown || !strings.Contains(st.Detail, "cannot reach") {
		t.Errorf("Status = %+v, %v", st, err)
	}
}

func TestInstallChecksExecutable(t *testing.T) {
	noSystemd(t)
	h, o := home(t, "")
	o.Executable = filepath.Join(h, "missing", "tether")
	if _, err := Install(o); err == nil || errors.Is(err, ErrNoServiceManager) || !strings.Contains(err.Error(), o.Executable) {
		t.Errorf("Install with a missing binary: %v", err)
	}
	if _, err := InstallTrayAutostart(o); err == nil {
		t.Error("InstallTrayAutostart with a missing binary succeeded")
	}
}

// xdgAutostartGenerator is systemd's XDG autostart generator: on systemd
// sessions (KDE Plasma's systemd startup, sway, ...) it is what starts
// autostart entries, as units wanted by xdg-desktop-autostart.target.
const xdgAutostartGenerator = "/usr/lib/systemd/user-generators/systemd-xdg-autostart-generator"

// The tray's autostart entry passes systemd's generator: it becomes a
// unit that xdg-desktop-autostart.target starts, running the tray; and
// once the binary is gone (TryExec), no unit.
func TestTrayAutostartThroughSystemdGenerator(t *testing.T) {
	if _, err := os.Stat(xdgAutostartGenerator); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v (Debian's systemd ships it)", err)
		}
		t.Skipf("no %s: %v", xdgAutostartGenerator, err)
	}
	noSystemd(t)
	h, o := home(t, "")
	if _, err := InstallTrayAutostart(o); err != nil {
		t.Fatal(err)
	}
	generate := func() string {
		out := filepath.Join(testdir.Temp(t), "generated")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(xdgAutostartGenerator, out, out, out)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(h, ".config"), "XDG_CONFIG_DIRS="+filepath.Join(h, "no-system-dirs"), "SYSTEMD_LOG_LEVEL=debug")
		log, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", xdgAutostartGenerator, err, log)
		}
		t.Logf("generator:\n%s", log)
		return out
	}
	const unit = "app-tether@autostart.service"
	out := generate()
	if _, err := os.Lstat(filepath.Join(out, "xdg-desktop-autostart.target.wants", unit)); err != nil {
		t.Fatalf("xdg-desktop-autostart.target does not want the tray: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(out, unit))
	if err != nil {
		t.Fatal(err)
	}
	// ExecStart=:PATH ARGS (':' turns off systemd's own expansion).
	want := "ExecStart=:" + systemdQuote(o.Executable) + " tray --at-login"
	if !slices.Contains(strings.Split(string(b), "\n"), want) {
		t.Errorf("generated unit has no %q:\n%s", want, b)
	}
	if err := os.Remove(o.Executable); err != nil {
		t.Fatal(err)
	}
	out = generate()
	if _, err := os.Lstat(filepath.Join(out, unit)); err == nil {
		t.Errorf("a unit for an entry whose binary is gone")
	}
}

// packaged makes the package's unit and binary, for this test, a unit
// file of its own and o's executable.
func packaged(t *testing.T, o Options) string {
	unit := filepath.Join(testdir.Temp(t), "tether.service")
	if err := os.WriteFile(unit, PackagedUnit(), 0o644); err != nil {
		t.Fatal(err)
	}
	oldUnit, oldExe := packagedUnitPath, packagedExecutable
	packagedUnitPath, packagedExecutable = unit, o.Executable
	t.Cleanup(func() { packagedUnitPath, packagedExecutable = oldUnit, oldExe })
	return unit
}

// Where a package installed the unit and the binary is the packaged one,
// install enables the packaged unit and writes only this user's drop-in
// (PATH, stop timeout; the command line only with a --config), removing
// a unit of its own from an earlier install; uninstall stops, disables
// and removes the drop-in. Another binary still gets a unit of its own.
func TestPackagedUnitWithFakeSystemd(t *testing.T) {
	h, o := home(t, "")
	cfg := filepath.Join(h, "xdg")
	o.Env["XDG_CONFIG_HOME"] = cfg
	o.Path = "/home/me/.local/bin:/usr/bin:/bin"
	unitDir := filepath.Join(cfg, "systemd", "user")
	fake := newFakeSystemd(t, unitDir)
	packaged(t, o)
	own := filepath.Join(unitDir, "tether.service")
	dropIn := filepath.Join(unitDir, "tether.service.d", "tether.conf")
	if err := os.MkdirAll(unitDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte(header+"[Service]\nExecStart=/old/tether service run\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r, err := Install(o)
	if err != nil || !r.Changed || !slices.Equal(r.Paths, []string{dropIn}) {
		t.Fatalf("Install = %+v, %v", r, err)
	}
	got, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	requireLines(t, got, "[Service]", "Environment=PATH=/home/me/.local/bin:/usr/bin:/bin", "TimeoutStopSec=30")
	if strings.Contains(string(got), "ExecStart") {
		t.Errorf("a drop-in without --config sets ExecStart:\n%s", got)
	}
	if _, err := os.Lstat(own); err == nil {
		t.Errorf("the earlier install's own unit %s is still there, hiding the packaged one", own)
	}
	if calls := fake.calls(t); !slices.Contains(calls, "--user enable tether.service") {
		t.Errorf("systemctl calls %q: the packaged unit not enabled", calls)
	}
	st, err := Status(o)
	if err != nil || !st.Installed || !st.Current || st.Path != dropIn {
		t.Errorf("Status = %+v, %v", st, err)
	}
	if s, ok, err := Installed(o); err != nil || !ok || s.Path != o.Path || s.StopTimeout != 30*time.Second {
		t.Errorf("Installed = %+v, %v, %v", s, ok, err)
	}
	fake.calls(t)

	// A --config: the drop-in replaces the command line.
	o.ConfigPath = filepath.Join(h, "bots.yaml")
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(dropIn)
	requireLines(t, got, "ExecStart=", "ExecStart=\""+o.Executable+"\" --config "+o.ConfigPath+" service run")
	fake.calls(t)

	r, err = Uninstall(o)
	if err != nil || !r.Changed || !slices.Contains(r.Paths, dropIn) {
		t.Fatalf("Uninstall = %+v, %v", r, err)
	}
	if calls := fake.calls(t); !slices.Contains(calls, "--user disable --now tether.service") {
		t.Errorf("systemctl calls %q: not stopped and disabled", calls)
	}
	if _, err := os.Lstat(filepath.Dir(dropIn)); err == nil {
		t.Errorf("%s is left", filepath.Dir(dropIn))
	}

	// Another binary: a unit of its own, and no drop-in of ours left.
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	o.Executable = filepath.Join(h, "tether")
	if err := os.WriteFile(o.Executable, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := Install(o); err != nil || !slices.Equal(r.Paths, []string{own}) {
		t.Fatalf("Install of another binary = %+v, %v", r, err)
	}
	if _, err := os.Lstat(dropIn); err == nil {
		t.Errorf("the drop-in is left beside a unit of the user's own")
	}
}
