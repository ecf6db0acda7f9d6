//go:build unix

package unix

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
}

func closeOnExec(t *testing.T, f *os.File) bool {
	t.Helper()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil {
		t.Fatalf("fcntl(%s, F_GETFD): %v", f.Name(), err)
	}
	return flags&unix.FD_CLOEXEC != 0
}

func openLock(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := OpenLockFile(path)
	if err != nil {
		t.Fatalf("OpenLockFile(%s): %v", path, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestOpenLockFileCreates0600(t *testing.T) {
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	path := filepath.Join(t.TempDir(), "id.lock")
	f := openLock(t, path)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("created lock file has mode %v, want -rw-------", fi.Mode())
	}
	if !closeOnExec(t, f) {
		t.Errorf("lock file descriptor is not close-on-exec")
	}
	// It opens again, as the same file.
	g := openLock(t, path)
	a, _ := f.Stat()
	b, _ := g.Stat()
	if !os.SameFile(a, b) {
		t.Errorf("second OpenLockFile opened another file")
	}
}

func TestOpenLockFileRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f, err := OpenLockFile(link)
	if !errors.Is(err, ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("OpenLockFile(symlink) = %v, want ErrSymlink", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != link {
		t.Errorf("error %v does not name the path %s", err, link)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("link target changed to %q", b)
	}

	// A dangling link must not create its target either.
	dangling := filepath.Join(dir, "dangling.lock")
	victim := filepath.Join(dir, "victim")
	if err := os.Symlink(victim, dangling); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenLockFile(dangling); !errors.Is(err, ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenLockFile(dangling symlink) = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling link target was created: %v", err)
	}
}

func TestOpenLockFileRefusesUnsafe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		root   bool
		make   func(t *testing.T, path string)
		reason string // in the UnsafeFileError; "" when any error will do
	}{
		{name: "mode 0644", reason: "mode", make: func(t *testing.T, path string) { writeMode(t, path, 0o644) }},
		{name: "mode 0640", reason: "mode", make: func(t *testing.T, path string) { writeMode(t, path, 0o640) }},
		{name: "mode 0602", reason: "mode", make: func(t *testing.T, path string) { writeMode(t, path, 0o602) }},
		{name: "hard link", reason: "hard links", make: func(t *testing.T, path string) {
			other := path + ".other"
			writeMode(t, other, 0o600)
			if err := os.Link(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "fifo", reason: "not a regular file", make: func(t *testing.T, path string) {
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		// open(2) itself refuses a directory for writing (EISDIR).
		{name: "directory", make: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "other owner", root: true, reason: "owned by uid 65534", make: func(t *testing.T, path string) {
			writeMode(t, path, 0o600)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				requireRoot(t)
			}
			path := filepath.Join(t.TempDir(), "id.lock")
			tc.make(t, path)
			before, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := OpenLockFile(path)
			if err == nil {
				f.Close()
				t.Fatalf("OpenLockFile accepted it")
			}
			if tc.reason != "" {
				var ue *UnsafeFileError
				if !errors.As(err, &ue) {
					t.Fatalf("OpenLockFile = %v (%T), want an *UnsafeFileError", err, err)
				}
				if ue.Path != path || !strings.Contains(ue.Reason, tc.reason) || !strings.Contains(err.Error(), path) {
					t.Errorf("UnsafeFileError %+v (%q): want path %s and a reason with %q", *ue, err, path, tc.reason)
				}
			}
			if errors.Is(err, ErrSymlink) {
				t.Errorf("OpenLockFile = %v: not a symlink", err)
			}
			// Refusing changes nothing.
			after, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid {
				t.Errorf("refused file changed: %v -> %v", before.Mode(), after.Mode())
			}
		})
	}
}

func writeMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, nil, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// flock belongs to the open file description: two opens in one process
// exclude each other, and a second TryLock through the same one succeeds.
func TestTryLockSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.lock")
	a, b := openLock(t, path), openLock(t, path)
	if err := TryLock(a); err != nil {
		t.Fatalf("TryLock(a): %v", err)
	}
	if err := TryLock(a); err != nil {
		t.Errorf("TryLock(a) again: %v", err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock(b) while a holds it = %v, want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatalf("Unlock(a): %v", err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock(b) after Unlock(a): %v", err)
	}
	a.Close()
	if err := TryLock(openLock(t, path)); !errors.Is(err, ErrLocked) {
		t.Errorf("TryLock(new) while b holds it = %v, want ErrLocked", err)
	}
	b.Close() // closing the last descriptor releases it
	if err := TryLock(openLock(t, path)); err != nil {
		t.Errorf("TryLock after the holder closed: %v", err)
	}
}

// lockTry asks a fresh process to take the lock.
func lockTry(t *testing.T, path string) string {
	t.Helper()
	cmd := helperCommand("lock-try", "", path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lock-try: %v: %s", err, out)
	}
	return string(bytes.TrimSpace(out))
}

func TestTryLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.lock")
	f := openLock(t, path)
	if err := TryLock(f); err != nil {
		t.Fatal(err)
	}
	if got := lockTry(t, path); got != "locked" {
		t.Errorf("another process, while this one holds the lock: %s, want locked", got)
	}
	if err := Unlock(f); err != nil {
		t.Fatal(err)
	}
	if got := lockTry(t, path); got != "acquired" {
		t.Errorf("another process, after Unlock: %s, want acquired", got)
	}
}

// The kernel drops a lock when its holder dies, even by SIGKILL.
func TestLockFreedWhenHolderKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.lock")
	rp := newReadyPipe(t)
	cmd := startHelper(t, "lock-hold", helperOpts{tag: "holder", args: []string{path}, ready: rp})
	rp.wait(t, "holder")
	f := openLock(t, path)
	if err := TryLock(f); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while a helper holds it = %v, want ErrLocked", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := TryLock(f); err != nil {
		t.Fatalf("TryLock after the holder was killed: %v", err)
	}
}

// A child that inherited the locked descriptor keeps the lock after the
// process that took it is gone, until it dies too: the lock lives as long
// as any process of a tree holds it.
func TestLockHeldByInheritingChild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.lock")
	rp := newReadyPipe(t)
	cmd := startHelper(t, "lock-pass", helperOpts{args: []string{path, "heir"}, ready: rp})
	heir := rp.wait(t, "heir")["heir"]
	t.Cleanup(func() { killAndReap(t, heir) })
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lock-pass: %v", err)
	}
	f := openLock(t, path)
	if err := TryLock(f); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while the heir lives = %v, want ErrLocked", err)
	}
	h, err := OpenHandle(heir)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The kernel closes a dying process's files before it becomes a
	// zombie, and WaitExit counts a zombie.
	if done, err := WaitExit([]*Handle{h}, waitLimit); err != nil || len(done) != 1 {
		t.Fatalf("WaitExit(heir) = %v, %v", done, err)
	}
	if err := TryLock(f); err != nil {
		t.Fatalf("TryLock after the heir died: %v", err)
	}
}

func TestSecureDir(t *testing.T) {
	old := unix.Umask(0o022)
	t.Cleanup(func() { unix.Umask(old) })
	base := t.TempDir()

	t.Run("creates 0700", func(t *testing.T) {
		path := filepath.Join(base, "new", "nested")
		if err := SecureDir(path); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Dir(path), path} {
			if fi, err := os.Lstat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, %v; want a 0700 directory", p, fi.Mode(), err)
			}
		}
	})
	t.Run("tightens", func(t *testing.T) {
		path := filepath.Join(base, "loose")
		if err := os.Mkdir(path, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o775); err != nil {
			t.Fatal(err)
		}
		if err := SecureDir(path); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o700 {
			t.Errorf("mode after SecureDir = %v, want 0700", fi.Mode())
		}
		if err := SecureDir(path); err != nil {
			t.Errorf("SecureDir of a secure directory: %v", err)
		}
	})
	t.Run("refuses symlink", func(t *testing.T) {
		target := filepath.Join(base, "target")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(target, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		err := SecureDir(link)
		var ue *UnsafeFileError
		if !errors.As(err, &ue) || ue.Path != link {
			t.Fatalf("SecureDir(symlink to a directory) = %v, want an *UnsafeFileError for %s", err, link)
		}
		if fi, _ := os.Lstat(target); fi.Mode().Perm() != 0o755 {
			t.Errorf("link target mode changed to %v", fi.Mode())
		}
		// A dangling link: no directory appears at its target.
		victim := filepath.Join(base, "victim")
		dangling := filepath.Join(base, "dangling")
		if err := os.Symlink(victim, dangling); err != nil {
			t.Fatal(err)
		}
		if err := SecureDir(dangling); err == nil {
			t.Errorf("SecureDir(dangling symlink) = nil")
		}
		if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("dangling link target was created: %v", err)
		}
	})
	t.Run("refuses file", func(t *testing.T) {
		path := filepath.Join(base, "file")
		writeMode(t, path, 0o600)
		if err := SecureDir(path); err == nil {
			t.Errorf("SecureDir(regular file) = nil")
		}
	})
	t.Run("refuses other owner", func(t *testing.T) {
		requireRoot(t)
		path := filepath.Join(base, "theirs")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		err := SecureDir(path)
		var ue *UnsafeFileError
		if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "65534") {
			t.Fatalf("SecureDir(directory of uid 65534) = %v, want an *UnsafeFileError naming the owner", err)
		}
		if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o755 {
			t.Errorf("another user's directory mode changed to %v", fi.Mode())
		}
	})
}

func TestOpenAppendNoFollow(t *testing.T) {
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.log")
	for _, s := range []string{"one\n", "two\n"} {
		f, err := OpenAppendNoFollow(path)
		if err != nil {
			t.Fatal(err)
		}
		if !closeOnExec(t, f) {
			t.Errorf("log descriptor is not close-on-exec")
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if b, _ := os.ReadFile(path); string(b) != "one\ntwo\n" {
		t.Errorf("log holds %q, want both lines appended", b)
	}
	if fi, _ := os.Lstat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("log created with mode %v, want 0600", fi.Mode())
	}

	target := filepath.Join(dir, "target")
	writeMode(t, target, 0o600)
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenAppendNoFollow(link); !errors.Is(err, ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenAppendNoFollow(symlink) = %v, want ErrSymlink", err)
	}
	dangling := filepath.Join(dir, "dangling.log")
	victim := filepath.Join(dir, "victim")
	if err := os.Symlink(victim, dangling); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenAppendNoFollow(dangling); !errors.Is(err, ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenAppendNoFollow(dangling symlink) = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling link target was created: %v", err)
	}
}
