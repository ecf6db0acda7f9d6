package scope_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/internal/usermanager"
)

// Under a real systemd user manager, a process of the user that may write
// no cgroup enters a transient scope with Delegate=yes and can then make
// a cgroup of its own below it; the scope goes once the process has.
func TestEnterScopeUnderUserManager(t *testing.T) {
	// A copy of the test binary runs the helper, where the user may.
	testproc.Used("enter-scope")
	m := usermanager.Start(t, usermanager.Options{})
	// The test binary, where the user may run it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(m.Home, "scope.test")
	if err := os.WriteFile(copied, b, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := "tether-platform-test.scope"
	cmd := m.Command(copied, "enter-scope", unit)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("entering the scope: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("helper output %q", out)
	}
	scope, child := lines[0], lines[1]
	t.Logf("Enter took %s (connect, Hello, StartTransientUnit, JobRemoved)", lines[2])
	if filepath.Base(scope) != unit || !strings.HasPrefix(scope, m.Cgroup+"/manager/") {
		t.Errorf("in cgroup %s, want %s below %s/manager", scope, unit, m.Cgroup)
	}
	if child != filepath.Join(scope, "child") {
		t.Errorf("NewCgroup made %s, want it in %s", child, scope)
	}
	// Empty, the scope is collected.
	var listed string
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		listed, err = m.Systemctl("list-units", "--all", "--plain", "--no-legend", unit)
		return err == nil && strings.TrimSpace(listed) == ""
	}) {
		t.Fatalf("%s still known to the manager: %s %v", unit, listed, err)
	}
}
