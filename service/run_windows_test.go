package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/internal/testproc"
)

// TestResolvePathsWindows: the config is roaming (%AppData%), the state
// and the locks are local to the machine (%LocalAppData%), and the API is
// a named pipe of the user and the profile.
func TestResolvePathsWindows(t *testing.T) {
	base := testdir.Temp(t)
	local, roaming := filepath.Join(base, "local"), filepath.Join(base, "roaming")
	t.Setenv("LocalAppData", local)
	t.Setenv("AppData", roaming)
	p, err := ResolvePaths("work", "")
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string][2]string{
		"config": {p.Config, filepath.Join(roaming, "tether", "agents.yaml")},
		"state":  {p.StateDir, filepath.Join(local, "tether", "work")},
		"locks":  {p.LockDir, filepath.Join(local, "tether", "locks")},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %s, want %s", what, got[0], got[1])
		}
	}
	if !strings.HasPrefix(p.Socket, `\\.\pipe\tether-`) || !strings.HasSuffix(p.Socket, "-work") {
		t.Errorf("socket %s, want \\\\.\\pipe\\tether-<user>-work", p.Socket)
	}
}

// TestRunWindows runs the service in the foreground: it serves on its
// pipe, a second service of the profile is refused and names the first's
// pid, and a quit through the API ends it and frees the pipe and the lock.
// No agent starts here, so no guardian is needed: the executable given
// does not exist, and the pool's warm guardian quietly fails to start.
func TestRunWindows(t *testing.T) {
	base := testdir.Temp(t)
	t.Setenv("LocalAppData", filepath.Join(base, "local"))
	t.Setenv("AppData", filepath.Join(base, "roaming"))
	cfg := filepath.Join(base, "agents.yaml")
	if err := os.WriteFile(cfg, []byte("agents:\n  - id: idle\n    command: [cmd, /c, exit]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ResolvePaths(fmt.Sprintf("run-test-%d", os.Getpid()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "no-guardian.exe")

	var first bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Run(p, exe, "test", &first) }()
	ended := false
	defer func() {
		if !ended {
			t.Logf("first service: %s", first.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(p.Socket)
	var st api.Status
	testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		st, err = c.Status(ctx)
		return err == nil || !errors.Is(err, client.ErrNotRunning)
	})
	if err != nil {
		t.Fatalf("waiting for the service: %v", err)
	}
	if st.Profile != p.Profile || st.ServicePID != os.Getpid() || len(st.Agents) != 1 {
		t.Errorf("Status = %+v", st)
	}

	var second bytes.Buffer
	if code := Run(p, exe, "test", &second); code != 1 {
		t.Errorf("a second service exited %d, want 1", code)
	}
	if msg := second.String(); !strings.Contains(msg, ErrAlreadyRunning.Error()) || !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("the second service said %q, want %q naming pid %d", msg, ErrAlreadyRunning, os.Getpid())
	}

	if err := c.Quit(ctx); err != nil {
		t.Fatalf("Quit: %v", err)
	}
	select {
	case code := <-done:
		ended = true
		if code != 0 {
			t.Errorf("the service exited %d after Quit: %s", code, first.String())
		}
	case <-ctx.Done():
		t.Fatal("the service did not exit after Quit")
	}
	if _, err := c.Status(ctx); !errors.Is(err, client.ErrNotRunning) {
		t.Errorf("Status after the service exited = %v, want ErrNotRunning", err)
	}
	lock, err := takeServiceLock(p)
	if err != nil {
		t.Fatalf("the service lock after the service exited: %v", err)
	}
	lock.Close()
}
