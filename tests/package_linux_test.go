package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The .deb of make dist, installed for real (make dist-test runs these
// with TETHER_PACKAGE_DEB and TETHER_PACKAGE_VERSION; they skip without).

// packagedFiles are the files the .deb must install.
var packagedFiles = []string{
	"/usr/bin/tether",
	"/usr/lib/systemd/user/tether.service",
	"/usr/share/applications/tether.desktop",
	"/usr/share/metainfo/tether.metainfo.xml",
	"/usr/share/icons/hicolor/48x48/apps/tether.png",
	"/usr/share/icons/hicolor/scalable/apps/tether.svg",
	"/usr/share/man/man1/tether.1.gz",
	"/usr/share/bash-completion/completions/tether",
	"/usr/share/zsh/vendor-completions/_tether",
	"/usr/share/fish/vendor_completions.d/tether.fish",
	"/usr/share/doc/tether/copyright",
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
		skipOrFail(t, "installing a package needs root")
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
	t.Cleanup(func() { apt("purge", "tether") })
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
	for _, f := range packagedFiles {
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
	res := r.must(false, "status", "--json")
	var st struct {
		Service struct{ Version string } `json:"service"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil || st.Service.Version != version {
		t.Errorf("status --json service.version %q (%v), want %q", st.Service.Version, err, version)
	}

	r.must(false, "service", "uninstall")
	if _, err := os.Lstat(dropIn); err == nil {
		t.Errorf("uninstall left %s", dropIn)
	}
	if _, err := os.Stat("/usr/lib/systemd/user/tether.service"); err != nil {
		t.Errorf("uninstall touched the packaged unit: %v", err)
	}
}

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
