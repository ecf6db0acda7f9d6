package guardian

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tether-dev/tether/internal/freezer"
	"github.com/tether-dev/tether/wire"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	sys "golang.org/x/sys/unix"
)

func TestKeyIsSafeAndDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"alice@relay", "../x", "..", ".", "/", "a/b", "a_b", "a?b", "ＡＢ", strings.Repeat("x", 256), "x\\y"} {
		k := Key(id)
		if strings.ContainsAny(k, "/\\") || strings.HasPrefix(k, ".") || k != filepath.Base(k) || len(k) > 32+1+16 {
			t.Errorf("Key(%q) = %q is not a safe file name", id, k)
		}
		if other, dup := seen[k]; dup {
			t.Errorf("Key(%q) == Key(%q) == %q", id, other, k)
		}
		seen[k] = id
	}
}

func TestHostileIdentities(t *testing.T) {
	e := newWorld(t)
	for _, c := range []struct{ name, id string }{
		{"empty", ""},
		{"4KB", strings.Repeat("a", 4096)},
		{"NUL", "ali\x00ce"},
		{"newline", "alice\nbob"},
		{"bad UTF-8", "al\xffice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Start(context.Background(), e.spec(c.id, "polite"))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("identity %q: err %v, want ErrConfig", c.id, err)
			}
		})
	}
	// A path-like identity is only a string: its lock stays in the lock
	// directory.
	t.Run("../x", func(t *testing.T) {
		s := e.start(e.spec("../x", "polite"))
		politeTree(e, s)
		if dir := filepath.Dir(s.Ready().LockPath); dir != e.locks {
			t.Errorf("lock %s is outside %s", s.Ready().LockPath, e.locks)
		}
		if dir := filepath.Dir(filepath.Dir(s.Ready().PrivateDir)); dir != e.priv {
			t.Errorf("private dir %s is outside %s", s.Ready().PrivateDir, e.priv)
		}
		if _, err := os.Lstat(filepath.Join(e.dir, "x.lock")); err == nil {
			t.Error("a lock escaped into the parent directory")
		}
	})
}

// The guardian checks the request itself, not only the owner: a raw start
// request with a NUL in the identity is refused with a typed answer.
func TestGuardianValidatesRawRequest(t *testing.T) {
	e := newWorld(t)
	for _, c := range []struct {
		name string
		line string
		code wire.Code
	}{
		{"NUL identity", `{"type":"start","version":1,"start":{"identity":"a\u0000b","argv":["/bin/true"],"stop_timeout":"1s","lock_dir":"/tmp","private_root":"/tmp"}}`, wire.CodeConfig},
		{"relative lock dir", `{"type":"start","version":1,"start":{"identity":"a","argv":["/bin/true"],"stop_timeout":"1s","lock_dir":"locks","private_root":"/tmp"}}`, wire.CodeConfig},
		{"not a start", `{"type":"stop","version":1}`, wire.CodeConfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, rc := rawGuardian(t, e, c.line+"\n")
			if rc != 1 || !strings.Contains(out, `"type":"failed"`) || !strings.Contains(out, `"code":"`+string(c.code)+`"`) {
				t.Fatalf("exit %d, answer %s", rc, out)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		out, rc := rawGuardian(t, e, "not json\n")
		if rc != 1 || out != "" {
			t.Fatalf("exit %d, answer %q", rc, out)
		}
	})
}

// A start request of a protocol version other than this guardian's is
// refused with a typed answer that names both versions, and nothing is
// started.
func TestGuardianRefusesUnknownVersion(t *testing.T) {
	e := newWorld(t)
	line := `{"type":"start","version":2,"start":{"identity":"a","argv":["/bin/true"],"stop_timeout":"1s","lock_dir":"` + e.locks + `","private_root":"` + e.priv + `"}}`
	out, rc := rawGuardian(t, e, line+"\n")
	want := fmt.Sprintf(`"failure":{"code":"%s","message":"protocol version 2; this guardian speaks %d"}`, wire.CodeConfig, wire.Version)
	if rc != 1 || !strings.Contains(out, `"type":"failed"`) || !strings.Contains(out, want) {
		t.Fatalf("exit %d, answer %s; want a failure with %s", rc, out, want)
	}
	if ents, _ := os.ReadDir(e.priv); len(ents) > 0 {
		t.Fatalf("a refused start made %v in %s", ents, e.priv)
	}
}

// rawGuardian runs a guardian with a socket pair on descriptor 3, writes
// input to it and returns everything it answered and its exit code.
func rawGuardian(t *testing.T, e *world, input string) (string, int) {
	t.Helper()
	ours, theirs, err := punix.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	cmd := exec.Command(e.exe, "guardian")
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	if _, err := ours.WriteString(input); err != nil {
		t.Fatal(err)
	}
	_ = sys.Shutdown(int(ours.Fd()), sys.SHUT_WR)
	var out bytes.Buffer
	_ = ours.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = out.ReadFrom(ours)
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

func TestGuardianRunByHandExplains(t *testing.T) {
	newWorld(t)
	cmd := exec.Command(os.Args[0], "guardian")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), "not meant to be run by hand") {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
}

func TestLockFileSymlinkRefused(t *testing.T) {
	e := newWorld(t)
	if err := os.MkdirAll(e.locks, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(e.dir, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{".lock", ".owner"} {
		t.Run(suffix, func(t *testing.T) {
			link := filepath.Join(e.locks, Key("linked")+suffix)
			os.Remove(link)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(link)
			_, err := Start(context.Background(), e.spec("linked", "polite"))
			var se *StartError
			if !errors.Is(err, ErrLock) || !errors.As(err, &se) || se.Path != link || !strings.Contains(se.Message, "symbolic link") {
				t.Fatalf("err %v, want a lock error naming %s", err, link)
			}
			if b, _ := os.ReadFile(target); string(b) != "keep me" {
				t.Errorf("the link target was changed: %q", b)
			}
			if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
				t.Errorf("the link target's mode was changed: %v", fi.Mode())
			}
			if d := e.privateDirs(); len(d) != 0 {
				t.Errorf("private dirs left: %v", d)
			}
		})
	}
	t.Run("lock dir", func(t *testing.T) {
		spec := e.spec("linked", "polite")
		spec.LockDir = filepath.Join(e.dir, "locklink")
		if err := os.Symlink(e.locks, spec.LockDir); err != nil {
			t.Fatal(err)
		}
		if _, err := Start(context.Background(), spec); !errors.Is(err, ErrLock) {
			t.Fatalf("err %v, want ErrLock", err)
		}
	})
}

func TestAgentEnvironmentAndArgv(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("env", "env")
	spec.Env = append(spec.Env, "SECRET_TOKEN=hunter2", "TMPDIR=/somewhere/else")
	s := e.start(spec)
	e.waitAnnounced(map[string]int{"leader": 1})
	b, err := os.ReadFile(filepath.Join(e.helper, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(b), "\n")
	pd := s.Ready().PrivateDir
	for _, want := range []string{"TMPDIR=" + pd, "TMP=" + pd, "TEMP=" + pd, "TETHER_PRIVATE_DIR=" + pd, "TETHER_IDENTITY=env", "SECRET_TOKEN=hunter2"} {
		if !contains(env, want) {
			t.Errorf("agent env lacks %s", want)
		}
	}
	if contains(env, "TMPDIR=/somewhere/else") {
		t.Error("the caller's TMPDIR shadows the private dir")
	}
	g := s.Ready().GuardianPID
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", g, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("the secret is in the guardian's %s", f)
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", g))
	if got := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"); len(got) != 2 || got[1] != "guardian" {
		t.Errorf("guardian argv %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A guardian binary that never answers, or answers garbage, fails the
// handshake with ErrHandshake and is reaped (the leak check proves it).
func TestHandshakeFailures(t *testing.T) {
	e := newWorld(t)
	for _, c := range []struct{ name, script string }{
		{"silent", "#!/bin/sh\nexec cat <&3 >/dev/null\n"},
		{"garbage", "#!/bin/sh\necho 'hello there' >&3\nexec cat <&3 >/dev/null\n"},
		{"dies", "#!/bin/sh\necho dying >&2\nexit 7\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := filepath.Join(e.dir, c.name+".sh")
			if err := os.WriteFile(fake, []byte(c.script), 0o755); err != nil {
				t.Fatal(err)
			}
			spec := e.spec("handshake", "polite")
			spec.Executable = fake
			spec.HandshakeTimeout = 200 * time.Millisecond
			_, err := Start(context.Background(), spec)
			if !errors.Is(err, ErrHandshake) {
				t.Fatalf("err %v, want ErrHandshake", err)
			}
			if c.name == "dies" && !strings.Contains(err.Error(), "dying") {
				t.Errorf("err %v lacks the guardian's stderr", err)
			}
		})
	}
}

// A Start whose context is cancelled during the handshake returns the
// context's error and leaves nothing behind.
func TestStartContextCancelled(t *testing.T) {
	e := newWorld(t)
	fake := filepath.Join(e.dir, "slow.sh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec cat <&3 >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := e.spec("cancel", "polite")
	spec.Executable = fake
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Start(ctx, spec); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHandshake) {
		t.Fatalf("err %v, want a handshake error wrapping the deadline", err)
	}
}

// I3 at the guardian: a tree that cannot be confirmed dead keeps the lock,
// is reported as cleanup_failed (typed, with the survivors) and retried;
// the failure stays the session's error until the stop that replaces it.
func TestCleanupFailureKeepsLockAndIsReported(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("unkillable", "polite")
	spec.StopTimeout = 100 * time.Millisecond
	spec.KillGrace = 200 * time.Millisecond
	s := e.start(spec)
	pids := e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2})
	worker := pids["sleeper"][0]
	thaw := freezer.Freeze(t, worker)
	stopErr := make(chan error, 1)
	go func() { stopErr <- s.Stop(context.Background(), 0) }()

	ev := <-s.Events()
	var ce *CleanupError
	if ev.Type != EventCleanupFailed || !errors.Is(ev.Err, ErrTreeAlive) || !errors.As(ev.Err, &ce) || !slicesContain(ce.Left, worker) {
		t.Fatalf("event %+v (err %v), want cleanup_failed naming pid %d", ev, ev.Err, worker)
	}
	if !errors.Is(s.Err(), ErrTreeAlive) {
		t.Fatalf("Session.Err() = %v, want the cleanup failure", s.Err())
	}
	if lockFree(t, s.Ready().LockPath) {
		t.Fatal("lock released while a tree member lives")
	}
	other := spec
	other.Profile = "other"
	if _, err := Start(context.Background(), other); !errors.Is(err, ErrContention) {
		t.Fatalf("second start during cleanup failure: %v, want contention", err)
	}
	if !errors.Is(s.Err(), ErrTreeAlive) {
		t.Fatalf("the failure was dropped: Session.Err() = %v", s.Err())
	}
	thaw()
	for ev := range s.Events() {
		if ev.Type == EventStopped {
			if ev.Err != nil {
				t.Fatalf("stopped with %v after thaw", ev.Err)
			}
		}
	}
	if err := <-stopErr; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if s.Err() != nil {
		t.Fatalf("a clean stop did not replace the failure: %v", s.Err())
	}
	if !lockFree(t, s.Ready().LockPath) || !gone(s.Ready().PrivateDir) {
		t.Fatal("lock or private dir left after the retried cleanup")
	}
}

func slicesContain(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// A private directory that cannot be removed (a mount inside it) is a
// typed cleanup warning; the tree is dead, so the lock is released.
func TestPrivateDirRemovalFailureReported(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root")
		}
		t.Skip("needs root to mount inside the private directory")
	}
	e := newWorld(t)
	s := e.start(e.spec("mounted", "polite"))
	politeTree(e, s)
	mnt := filepath.Join(s.Ready().PrivateDir, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sys.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sys.Unmount(mnt, sys.MNT_DETACH)
		_ = os.RemoveAll(s.Ready().PrivateDir)
	})
	err := s.Stop(context.Background(), 0)
	var ce *CleanupError
	if !errors.Is(err, ErrCleanupFailed) || errors.Is(err, ErrTreeAlive) || !errors.As(err, &ce) || ce.Code != wire.CleanupPrivateDir {
		t.Fatalf("Stop: %v, want a private_dir cleanup error", err)
	}
	if !errors.Is(s.Err(), ErrCleanupFailed) {
		t.Errorf("Session.Err() = %v", s.Err())
	}
	if !lockFree(t, s.Ready().LockPath) {
		t.Error("lock held although the tree is dead")
	}
}
