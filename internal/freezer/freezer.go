//go:build linux

// Package freezer makes processes unkillable for tests, through the cgroup
// v1 freezer: a frozen process cannot die, not even of SIGKILL, until it
// is thawed. Tests use it to make a cleanup fail for real; nothing outside
// tests may import it.
package freezer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// Root is where the cgroup v1 freezer is mounted.
const Root = "/sys/fs/cgroup/freezer"

// Freeze puts pid in a freezer group of its own and freezes it. It skips
// the test without root or the freezer, and fails it instead when CI=true.
// The returned thaw may be called any number of times; the test's cleanup
// thaws and removes the group.
func Freeze(t testing.TB, pid int) (thaw func()) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(Root, "cgroup.procs")); err != nil || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs root and the cgroup v1 freezer at %s: %v", Root, err)
		}
		t.Skipf("needs root and the cgroup v1 freezer at %s", Root)
	}
	dir := filepath.Join(Root, fmt.Sprintf("tether-test-%d-%d", os.Getpid(), pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(file, v string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	write("cgroup.procs", fmt.Sprint(pid))
	write("freezer.state", "FROZEN")
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			write("freezer.state", "THAWED")
		}
	}
	t.Cleanup(func() {
		thaw()
		testproc.UntilEvery(5*time.Second, 5*time.Millisecond, func() bool { return os.Remove(dir) == nil })
	})
	return thaw
}
