//go:build unix

package unix

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sockDir returns a fresh directory with a short path: unix socket paths
// must stay under ~100 bytes, and t.TempDir's names grow with the test's.
func sockDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func listen(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	l, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("ListenUnix(%s): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// answers reports whether something accepts a connection on path.
func answers(t *testing.T, path string) bool {
	t.Helper()
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// staleSocket leaves a socket file at path that nobody listens on, as a
// service killed by SIGKILL does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if answers(t, path) {
		t.Fatal("a closed socket still answers")
	}
}

func TestListenUnixModes(t *testing.T) {
	// A directory that exists with a wider mode is tightened; one that
	// does not is created 0700.
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(sockDir(t), "run")
		if existing {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "p.sock")
		l := listen(t, path)
		di, err := os.Lstat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode() != fs.ModeDir|0o700 {
			t.Errorf("existing=%v: directory mode %v, want drwx------", existing, di.Mode())
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != fs.ModeSocket|0o600 {
			t.Errorf("existing=%v: socket mode %v, want Srw-------", existing, fi.Mode())
		}
		if !answers(t, path) {
			t.Errorf("existing=%v: nothing answers on the new socket", existing)
		}
		// Closing the listener removes the socket file.
		l.Close()
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("existing=%v: after Close, Lstat(socket) = %v, want not exist", existing, err)
		}
	}
}

func TestListenUnixRemovesStale(t *testing.T) {
	path := filepath.Join(sockDir(t), "p.sock")
	staleSocket(t, path)
	listen(t, path)
	if !answers(t, path) {
		t.Fatal("nothing answers after replacing a stale socket")
	}
}

func TestListenUnixInUse(t *testing.T) {
	path := filepath.Join(sockDir(t), "p.sock")
	l := listen(t, path)
	l2, err := ListenUnix(path)
	if err == nil {
		l2.Close()
		t.Fatal("a second ListenUnix on a live socket succeeded")
	}
	if !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("second ListenUnix = %v, want ErrSocketInUse", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	// The live service keeps its socket.
	got := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		got <- err
	}()
	if !answers(t, path) {
		t.Fatal("the first listener's socket was removed or replaced")
	}
	if err := <-got; err != nil {
		t.Fatalf("first listener: %v", err)
	}
}

// TestListenUnixClaimed: while another process holds the path's lock (it
// is between the stale check and its listen), ListenUnix gives way.
func TestListenUnixClaimed(t *testing.T) {
	path := filepath.Join(sockDir(t), "p.sock")
	if err := SecureDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	f, err := OpenLockFile(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := TryLock(f); err != nil {
		t.Fatal(err)
	}
	l, err := ListenUnix(path)
	if err == nil {
		l.Close()
		t.Fatal("ListenUnix succeeded while the path is being claimed")
	}
	if !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("ListenUnix = %v, want ErrSocketInUse", err)
	}
	if err := Unlock(f); err != nil {
		t.Fatal(err)
	}
	listen(t, path)
}

func TestListenUnixRefusesSymlink(t *testing.T) {
	dir := sockDir(t)
	path := filepath.Join(dir, "p.sock")
	// The link points at a stale socket elsewhere: following it would
	// dial it and remove it.
	other := filepath.Join(sockDir(t), "other.sock")
	staleSocket(t, other)
	// And at a live one: that must not make the path look in use
	// either, nor be touched.
	live := filepath.Join(sockDir(t), "live.sock")
	listen(t, live)
	for _, target := range []string{other, live, filepath.Join(dir, "dangling")} {
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		l, err := ListenUnix(path)
		if err == nil {
			l.Close()
			t.Fatalf("ListenUnix over a symlink to %s succeeded", target)
		}
		if ue, ok := errors.AsType[*UnsafeFileError](err); !ok || ue.Path != path {
			t.Fatalf("ListenUnix over a symlink to %s = %v, want an *UnsafeFileError for %s", target, err, path)
		}
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("the symlink was not left in place: %v, %v", fi, err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Lstat(other); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		t.Errorf("the symlink's target was touched: %v, %v", fi, err)
	}
	if !answers(t, live) {
		t.Error("the live socket the symlink pointed at no longer answers")
	}
}

func TestListenUnixRefusesNonSocket(t *testing.T) {
	path := filepath.Join(sockDir(t), "p.sock")
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ListenUnix(path)
	if _, ok := errors.AsType[*UnsafeFileError](err); !ok {
		t.Fatalf("ListenUnix over a regular file = %v, want an *UnsafeFileError", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was changed: %q, %v", b, err)
	}
}

func TestListenUnixRefusesUnsafeDir(t *testing.T) {
	base := sockDir(t)
	realDir := filepath.Join(base, "realDir")
	if err := os.Mkdir(realDir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(realDir, link); err != nil {
		t.Fatal(err)
	}
	_, err := ListenUnix(filepath.Join(link, "p.sock"))
	if ue, ok := errors.AsType[*UnsafeFileError](err); !ok || ue.Path != link {
		t.Errorf("ListenUnix in a symlinked directory = %v, want an *UnsafeFileError for %s", err, link)
	}

	if os.Geteuid() != 0 {
		return // chown needs root; TestSecureDir covers the rest
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = ListenUnix(filepath.Join(theirs, "p.sock"))
	if ue, ok := errors.AsType[*UnsafeFileError](err); !ok || ue.Path != theirs {
		t.Errorf("ListenUnix in a directory of uid 65534 = %v, want an *UnsafeFileError for %s", err, theirs)
	}
}

func TestListenUnixPathTooLong(t *testing.T) {
	dir := sockDir(t)
	path := filepath.Join(dir, strings.Repeat("x", maxSocketPath-len(dir)))
	_, err := ListenUnix(path)
	if !errors.Is(err, ErrSocketPathTooLong) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ListenUnix(%d bytes) = %v, want ErrSocketPathTooLong naming the path", len(path), err)
	}
	// The longest path allowed works.
	listen(t, path[:maxSocketPath])
}

func TestPeerUID(t *testing.T) {
	path := filepath.Join(sockDir(t), "p.sock")
	l := listen(t, path)
	type result struct {
		c   *net.UnixConn
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := l.AcceptUnix()
		got <- result{c, err}
	}()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.c.Close()
	for name, c := range map[string]*net.UnixConn{"server end": r.c, "client end": client} {
		uid, pid, err := PeerUID(c)
		if err != nil {
			t.Fatalf("%s: PeerUID: %v", name, err)
		}
		if uid != os.Geteuid() || pid != os.Getpid() {
			t.Errorf("%s: PeerUID = uid %d pid %d, want uid %d pid %d", name, uid, pid, os.Geteuid(), os.Getpid())
		}
	}
}
