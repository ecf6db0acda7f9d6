// Package tests holds end-to-end tests that build the real tether binary
// and drive it through its command-line contract.
package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// tether is the binary the tests run, and tetherGuardian the guardian's
// own executable beside it, which its service runs for each agent.
var tether, tetherGuardian string

func TestMain(m *testing.M) {
	var dir string
	testproc.Main(m, testproc.EveryHelperUsed(),
		// Guardians whose service a test kills are orphaned; as a
		// subreaper this process adopts them (instead of PID 1, which
		// may not reap), so tests can see and reap them.
		testproc.Before(func() error {
			_, err := punix.BecomeSubreaper()
			return err
		}),
		testproc.Before(func() (err error) {
			if dir, err = os.MkdirTemp("", "tether-e2e-"); err != nil {
				return err
			}
			tether = filepath.Join(dir, "tether")
			tetherGuardian = filepath.Join(dir, "tether-guardian")
			for _, b := range [][2]string{{tether, "github.com/tether-dev/tether"}, {tetherGuardian, "github.com/tether-dev/tether/guardian/cmd/tether-guardian"}} {
				build := exec.Command("go", "build", "-o", b[0], b[1])
				build.Stdout, build.Stderr = os.Stderr, os.Stderr
				if err := build.Run(); err != nil {
					return fmt.Errorf("building %s: %w", filepath.Base(b[0]), err)
				}
			}
			return nil
		}),
		testproc.After(func() {
			if dir != "" {
				os.RemoveAll(dir)
			}
		}))
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	return newWorld(t).run(timeout, args...)
}

func (w *world) run(timeout time.Duration, args ...string) result {
	t := w.t
	t.Helper()
	cmd := w.cmd(tether, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = w.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("tether %v did not finish within %v\nstdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errb.String())
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

func TestDemoRunsAndCleansUp(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "tether-demo-*"))
	r := run(t, 60*time.Second, "demo")
	if r.code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"escapee in its own session",
		"worker in its own process group",
		"tree gone, private dir removed and lock free after",
		"exit 4 (contention): ",
		"live trees of \"demo@local\": 1",
		"ok: one identity ran exactly once",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "tether-demo-*"))
	if len(after) > len(before) {
		t.Errorf("demo left its directory behind: %v", after)
	}
}

func TestCommandLineContract(t *testing.T) {
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"version"}, 0, "tether ", ""},
		{[]string{"--profile", "work", "version"}, 0, "tether ", ""},
		{[]string{"--config=/nonexistent.yaml", "version"}, 0, "tether ", ""},
		{[]string{}, 0, "usage: tether", ""},
		{[]string{"guardian"}, 2, "", "not meant to be run by hand"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"--profile"}, 2, "", "--profile needs a value"},
		{[]string{"status"}, 3, "", "no service is running for profile \"default\""},
		{[]string{"--profile", "work", "start", "a"}, 3, "", "tether --profile work service run"},
		{[]string{"--profile", "../x", "status"}, 1, "", "profile \"../x\""},
		{[]string{"start"}, 2, "", "usage: tether start"},
		{[]string{"logs"}, 2, "", "usage: tether logs"},
		{[]string{"config", "frob"}, 2, "", "usage: tether config init"},
		{[]string{"service", "install", "--print"}, 0, "WantedBy=default.target", ""},
		// The PATH the agents will see: the installing shell's, shown.
		{[]string{"service", "install", "--print"}, 0, "\nEnvironment=PATH=" + os.Getenv("PATH") + "\n", ""},
		{[]string{"service", "install"}, 1, "", "tether service run"},
		{[]string{"tray", "extra"}, 2, "", "takes no arguments"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			r := run(t, 10*time.Second, c.args...)
			if r.code != c.code || !strings.Contains(r.stdout, c.stdout) || !strings.Contains(r.stderr, c.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", r.code, c.code, r.stdout, c.stdout, r.stderr, c.stderr)
			}
		})
	}
}

func TestConfigInitAndCheck(t *testing.T) {
	w := newWorld(t)
	if r := w.run(10*time.Second, "check"); r.code != 0 || !strings.Contains(r.stdout, "embedded default") {
		t.Fatalf("check without a config: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := w.run(10*time.Second, "config", "init")
	if r.code != 0 || !strings.Contains(r.stdout, w.configPath()) {
		t.Fatalf("config init: %d %q %q", r.code, r.stdout, r.stderr)
	}
	fi, err := os.Stat(w.configPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", fi, err)
	}
	if r := w.run(10*time.Second, "check"); r.code != 0 || !strings.Contains(r.stdout, "1 agent") {
		t.Fatalf("check of the written default: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := w.run(10*time.Second, "config", "init"); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Fatalf("second config init: %d %q", r.code, r.stderr)
	}
}

// The advice for a service that is not running starts what is there: a
// `service run` when nothing is installed, never `service start`; and
// `service status` tells a `service run` that answers from a service
// the OS's manager runs.
func TestServiceAdviceFitsWhatIsInstalled(t *testing.T) {
	w := newWorld(t)
	w.writeConfig("agents: []\n")
	r := w.run(10*time.Second, "status")
	if r.code != 3 || strings.Contains(r.stderr, "service start") || !strings.Contains(r.stderr, `"tether service run"`) {
		t.Errorf("status with no service and nothing installed: exit %d\n%s", r.code, r.stderr)
	}
	svc := w.startService("default")
	r = w.run(10*time.Second, "service", "status")
	want := fmt.Sprintf("running (pid %d, not managed by ", svc.cmd.Process.Pid)
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("service status with a service run answering: exit %d, want %q in\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}
