package scope

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// With no bus, or a bus that no systemd manager owns a name on, Enter
// says there is no user manager, and the process stays where it was.
func TestEnterWithoutManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := Enter(ctx, "", "tether-test.scope", "test"); !errors.Is(err, ErrNoUserManager) {
		t.Errorf("no bus: %v, want ErrNoUserManager", err)
	}
	dir := t.TempDir()
	if err := Enter(ctx, "unix:path="+filepath.Join(dir, "nothing"), "tether-test.scope", "test"); !errors.Is(err, ErrNoUserManager) {
		t.Errorf("no socket: %v, want ErrNoUserManager", err)
	}

	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		testproc.SkipOrFail(t, "dbus-daemon not found: %v", err)
	}
	sock := filepath.Join(dir, "bus")
	cmd := exec.Command(daemon, "--session", "--nofork", "--nopidfile", "--nosyslog", "--address=unix:path="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The socket file is there before the daemon listens on it.
	testproc.Eventually(t, waitLimit, func() bool {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the bus never listened on %s", sock)
	before, _ := punix.OwnCgroupDir()
	address := SessionBusAddress(func(k string) (string, bool) {
		if k == "XDG_RUNTIME_DIR" {
			return dir, true
		}
		return "", false
	})
	if address != "unix:path="+sock {
		t.Errorf("SessionBusAddress from XDG_RUNTIME_DIR: %q", address)
	}
	begin := time.Now()
	err = Enter(ctx, address, "tether-test.scope", "test")
	if !errors.Is(err, ErrNoUserManager) || !strings.Contains(err.Error(), "nothing owns") {
		t.Errorf("a bus without a manager: %v, want ErrNoUserManager: nothing owns ...", err)
	}
	t.Logf("a bus without a manager answered in %v: %v", time.Since(begin), err)
	if after, _ := punix.OwnCgroupDir(); after != before {
		t.Errorf("the process moved from %s to %s", before, after)
	}
}

func TestUnitName(t *testing.T) {
	for in, want := range map[string]string{
		"tether-alice@relay-0123": "tether-alice_relay-0123.scope",
		"a/b c":                   "a_b_c.scope",
		"x.y:z_w-v":               "x.y:z_w-v.scope",
	} {
		if got := UnitName(in); got != want {
			t.Errorf("UnitName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := UnitName(strings.Repeat("a", 300)); len(got) > 255 {
		t.Errorf("a long name gives %d bytes", len(got))
	}
}
