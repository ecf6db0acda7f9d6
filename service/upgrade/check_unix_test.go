//go:build unix

package upgrade

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// A check that forks, answers yes and then does not exit is killed with
// everything it forked: no process of it is left behind (on a service,
// a subreaper, it would be left as its child).
func TestCheckLeavesNoChild(t *testing.T) {
	dir := testdir.Temp(t)
	pidFile := filepath.Join(dir, "forked")
	exe := filepath.Join(dir, "forking")
	body := "#!/bin/sh\nsleep 1000 &\necho $! >" + pidFile + "\ncat >/dev/null\n" +
		`echo '{"version":"x","build":"b","handover":1}'` + "\nexec sleep 1000\n"
	if err := os.WriteFile(exe, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	_, _, err := check(exe, nil, Offer{Handover: Version})
	if err == nil || !strings.Contains(err.Error(), "had not exited") {
		t.Fatalf("a check that does not exit: %v, want it refused as such", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	gone := func() bool {
		p, err := punix.Stat(pid)
		return err != nil || p.State == 'Z'
	}
	if !testproc.Until(5*time.Second, gone) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the check's child %d outlived it", pid)
	}
}
