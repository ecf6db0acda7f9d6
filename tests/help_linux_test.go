package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// The commands a user types, as the usage lists them.
var userCommands = []string{"tray", "demo", "service", "status", "top", "start", "stop", "restart", "logs", "check", "reload", "config", "completion", "version", "help"}

// TestHelpOfEachCommand: `tether help CMD` and `tether CMD --help` print
// the same help, with its usage line and an example, and exit 0; the
// usage writes ids as ID...
func TestHelpOfEachCommand(t *testing.T) {
	w := newWorld(t)
	for _, cmd := range userCommands {
		r := w.run(10*time.Second, "help", cmd)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "usage: tether "+cmd) || !strings.Contains(r.stdout, "\nexample:\n") {
			t.Errorf("help %s: exit %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
		if cmd == "help" {
			continue
		}
		if h := w.run(10*time.Second, cmd, "--help"); h.code != 0 || h.stdout != r.stdout {
			t.Errorf("%s --help: exit %d, and not help %s:\n%s%s", cmd, h.code, cmd, h.stdout, h.stderr)
		}
	}
	r := w.run(10*time.Second, "help")
	for _, want := range []string{"start [--no-wait] ID...", "stop ID...", "restart [--no-wait] ID...", "logs ID"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the usage lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := w.run(10*time.Second, "start"); r.code != 2 || !strings.Contains(r.stderr, "usage: tether start [--no-wait] ID...") {
		t.Errorf("start without ids: exit %d\n%s", r.code, r.stderr)
	}
}

// TestDidYouMean: a mistyped command, and a mistyped agent id given to
// start, stop, restart or logs, is answered with the one meant.
func TestDidYouMean(t *testing.T) {
	w := newWorld(t)
	if r := w.run(10*time.Second, "stauts"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "stauts"; did you mean "status"?`) {
		t.Errorf("stauts: exit %d\n%s", r.code, r.stderr)
	}
	w.writeConfig("agents:\n  - id: alice\n    command: [/bin/sleep, \"1000\"]\n    stop_timeout: 1s\n")
	w.startService("default")
	for _, args := range [][]string{{"start", "alcie"}, {"stop", "alcie"}, {"restart", "alcie"}, {"logs", "alcie"}} {
		r := w.run(30*time.Second, args...)
		if r.code != 1 || !strings.Contains(r.stderr, `"alcie"`) || !strings.Contains(r.stderr, `did you mean "alice"?`) {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := w.run(10*time.Second, "start", "zzz"); r.code != 1 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("start zzz: exit %d, a suggestion for nothing like an id:\n%s", r.code, r.stderr)
	}
}

// TestVersion: the version names the module version (devel without
// one), the commit or why there is none, and the toolchain; a binary
// built in a checkout with version control information names its commit.
func TestVersion(t *testing.T) {
	r := run(t, 10*time.Second, "version")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "tether ") || !strings.HasPrefix(lines[1], "commit ") ||
		!strings.Contains(lines[2], runtime.Version()) {
		t.Fatalf("version: exit %d\n%s", r.code, r.stdout)
	}

	// A copy of this module's sources, committed to a repository of its
	// own and built there with version control information.
	needTools(t, "git")
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	copyTree(t, strings.TrimSpace(string(root)), src)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=tether test", "-c", "user.email=test@example.invalid", "-C", src}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "a commit to build")
	rev := git("rev-parse", "HEAD")
	bin := filepath.Join(dir, "tether")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "tether v0.0.0-") || !strings.Contains(string(out), "\ncommit "+rev+" of ") || strings.Contains(string(out), "not committed") {
		t.Errorf("version of a build of commit %s:\n%s", rev, out)
	}
}

// copyTree copies the regular files below from to to, leaving out
// version control directories.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if d.Name() == ".git" || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStatusErrorNotCut: the error column is whole when the output is
// not a terminal, and with --wide on one; on a terminal it is cut;
// --json has the whole message without repeated prefixes.
func TestStatusErrorNotCut(t *testing.T) {
	w := newWorld(t)
	missing := "/nonexistent/" + strings.Repeat("a-very-long-directory-name/", 6) + "agent-END"
	w.writeConfig("agents:\n  - id: broken\n    command: [" + missing + "]\n    autostart: true\n")
	w.startService("default")
	row := w.waitState("default", "broken", api.StateFailed)
	if row.Error == nil || !strings.Contains(row.Error.Message, "agent-END") {
		t.Fatalf("the row's error does not name the command: %+v", row.Error)
	}
	if r := w.mustRun("status"); !strings.Contains(r.stdout, missing) {
		t.Errorf("status to a pipe cut the error:\n%s", r.stdout)
	}
	// --json carries the whole message, once: no code or whose start it
	// was before it (the row says both), nothing cut.
	if e := w.status("default")["broken"].Error; e == nil || e.Code != api.CodeSpawn || !strings.Contains(e.Message, missing) ||
		strings.Contains(e.Message, string(api.CodeSpawn)+":") || strings.Contains(e.Message, "guardian") {
		t.Errorf("status --json's error: %+v, want code spawn and the whole message naming %s, without prefixes", e, missing)
	}
	needTools(t, "script")
	onTTY := func(args ...string) string {
		t.Helper()
		// script(1) runs the command on a pseudo-terminal of its own.
		cmd := exec.Command("script", "-qec", tether+" "+strings.Join(args, " "), os.DevNull)
		cmd.Env = append(w.env, "COLUMNS=200")
		out, _, err := runBounded(t, cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("script %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := onTTY("status"); strings.Contains(out, "agent-END") || !strings.Contains(out, "…") {
		t.Errorf("status on a terminal did not cut the error:\n%s", out)
	}
	if out := onTTY("status", "--wide"); !strings.Contains(out, "agent-END") {
		t.Errorf("status --wide on a terminal cut the error:\n%s", out)
	}
}
