package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// A private directory that an earlier run left (its guardian was killed
// before its teardown, or the removal failed) is removed when the
// service starts, and the service's log says so; one not named as
// tether names them is left alone.
func TestServiceSweepsLeftoverPrivateDirs(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, false))
	root := filepath.Join(w.dir, "state", "tether", "default", "private")
	key := guardian.Key("x@relay")
	left := filepath.Join(root, key, key+"-"+strings.Repeat("ab", 16))
	// One in the layout of earlier versions, straight in the root.
	flat := filepath.Join(root, key+"-"+strings.Repeat("cd", 16))
	if err := os.MkdirAll(flat, 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(left, "cache")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(left, "a.tmp"), filepath.Join(sub, "b.tmp")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sub, 0o500); err != nil {
		t.Fatal(err)
	}
	// An identity's directory left empty, and one with something in it
	// that tether did not make.
	idle := filepath.Join(root, guardian.Key("idle@relay"))
	busy := filepath.Join(root, guardian.Key("busy@relay"))
	for _, dir := range []string{idle, filepath.Join(busy, "notes")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(root, "not-tethers")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	s := w.startService("default")
	for _, dir := range []string{left, flat} {
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("the leftover private directory %s is still there (%v)", dir, err)
		}
		if want := fmt.Sprintf("removed the private directory %s left by an earlier run", dir); !strings.Contains(s.output(), want) {
			t.Errorf("the service log lacks %q:\n%s", want, s.output())
		}
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("a directory tether did not make was touched: %v", err)
	}
	if _, err := os.Lstat(idle); !os.IsNotExist(err) {
		t.Errorf("the empty directory of an identity not running, %s, is still there (%v)", idle, err)
	}
	if _, err := os.Lstat(filepath.Join(busy, "notes")); err != nil {
		t.Errorf("what tether did not make in an identity's directory was touched: %v", err)
	}
}

// An empty cgroup that a guardian made for its agent and left (it was
// killed after it let go of the identity, before it removed the cgroup)
// is removed when the service starts, and the service's log says so; one
// not named as guardians name them, or with a process in it, is left
// alone.
func TestServiceSweepsLeftoverCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "a writable cgroup v2 needs root here")
	}
	own, err := punix.OwnCgroupDir()
	if err != nil {
		testproc.SkipOrFail(t, "no cgroup v2: %v", err)
	}
	m := uniqueMarker()
	key := guardian.Key(m + "@relay")
	left := filepath.Join(own, "tether-"+key+"-"+strings.Repeat("ab", 16))
	other := filepath.Join(own, "tether-not-an-agent-"+m)
	busy := filepath.Join(own, "tether-"+key+"-"+strings.Repeat("cd", 16))
	for _, dir := range []string{left, other, busy} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			testproc.SkipOrFail(t, "no writable cgroup v2: %v", err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
	}
	// A process in busy: a cgroup in use is never removed.
	fd, err := unix.Open(busy, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	err = sleeper.Start()
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	})

	w := newWorld(t)
	w.writeConfig("agents: []\n")
	s := w.startService("default")
	if _, err := os.Lstat(left); !os.IsNotExist(err) {
		t.Errorf("the leftover cgroup %s is still there (%v)", left, err)
	}
	if want := fmt.Sprintf("removed the empty cgroup %s left by an earlier run", left); !strings.Contains(s.output(), want) {
		t.Errorf("the service log lacks %q:\n%s", want, s.output())
	}
	for _, dir := range []string{other, busy} {
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("the cgroup %s was touched: %v", dir, err)
		}
	}
}
