package usermanager

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The manager runs, answers systemctl --user and busctl --user, places a
// command in a transient scope with a delegated cgroup, and leaves nothing
// behind.
func TestManager(t *testing.T) {
	var m *Manager
	t.Run("up", func(t *testing.T) {
		m = Start(t, Options{})
		if out, err := m.Systemctl("is-system-running"); strings.TrimSpace(out) != "running" {
			t.Errorf("is-system-running: %q %v", out, err)
		}
		out, err := m.Output("systemd-run", "--user", "--scope", "-p", "Delegate=yes", "--unit=usermanager-test.scope",
			"sh", "-c", "grep ^0:: /proc/self/cgroup")
		if err != nil {
			t.Fatalf("systemd-run --user --scope: %v: %s", err, out)
		}
		rel := strings.TrimPrefix(strings.TrimSpace(lastLine(out)), "0::")
		scope := filepath.Join(filepath.Dir(m.Cgroup), rel)
		if !strings.HasPrefix(scope, m.Cgroup+"/manager/") || filepath.Base(scope) != "usermanager-test.scope" {
			t.Errorf("the scope's cgroup is %s, want usermanager-test.scope below %s/manager", scope, m.Cgroup)
		}
		if fi, err := os.Stat(m.RuntimeDir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("runtime dir %s: %v %v", m.RuntimeDir, fi.Mode(), err)
		}
		if _, err := os.Stat(m.HostPath(m.RunUserDir() + "/bus")); err != nil {
			t.Errorf("the session bus socket: %v", err)
		}
	})
	if m == nil || t.Failed() {
		return
	}
	// After the subtest's cleanup, nothing of it is left.
	for _, p := range []string{m.Cgroup, m.v1, filepath.Dir(m.Home)} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", p, err)
		}
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Errorf("/run/systemd/system exists outside the manager's namespace")
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(m.PID)); err == nil {
		t.Errorf("systemd --user (pid %d) still there", m.PID)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
