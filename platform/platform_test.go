package platform_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/platform"
)

// TestLockFile: one open file holds the lock, another is told ErrLocked
// and can still read what the holder wrote from LockDataOffset on; once
// unlocked, the other takes it.
func TestLockFile(t *testing.T) {
	path := filepath.Join(testdir.Temp(t), "x.lock")
	a, err := platform.OpenLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := platform.OpenLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := platform.TryLock(a); err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	if err := platform.TryLock(b); !errors.Is(err, platform.ErrLocked) {
		t.Fatalf("TryLock of a held lock = %v, want ErrLocked", err)
	}
	if _, err := a.WriteAt([]byte("1234\n"), platform.LockDataOffset); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := b.ReadAt(buf, platform.LockDataOffset); err != nil || string(buf) != "1234\n" {
		t.Errorf("reading the held file at LockDataOffset: %q, %v", buf, err)
	}
	if err := platform.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := platform.TryLock(b); err != nil {
		t.Errorf("TryLock after Unlock: %v", err)
	}
}

// TestPrivateFiles: SecureDir makes the directory, MkdirPrivate refuses
// an existing one, OpenAppendNoFollow appends, RemoveAll removes the tree
// and is content when it is gone.
func TestPrivateFiles(t *testing.T) {
	dir := filepath.Join(testdir.Temp(t), "a", "b")
	if err := platform.SecureDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("after SecureDir: %v, %v", fi, err)
	}
	if err := platform.SecureDir(dir); err != nil {
		t.Errorf("SecureDir of its own directory: %v", err)
	}
	priv := filepath.Join(dir, "p")
	if err := platform.MkdirPrivate(priv); err != nil {
		t.Fatal(err)
	}
	if err := platform.MkdirPrivate(priv); !errors.Is(err, fs.ErrExist) {
		t.Errorf("MkdirPrivate of an existing directory = %v, want fs.ErrExist", err)
	}
	log := filepath.Join(priv, "x.log")
	for _, s := range []string{"one\n", "two\n"} {
		f, err := platform.OpenAppendNoFollow(log)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(s)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the log holds %q (%v), want both lines", b, err)
	}
	if err := platform.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	if err := platform.RemoveAll(dir); err != nil {
		t.Errorf("RemoveAll of nothing: %v", err)
	}
}

// socketPath is a fresh local socket or pipe name.
func socketPath(t *testing.T) string {
	if runtime.GOOS == "windows" {
		return fmt.Sprintf(`\\.\pipe\tether-platform-test-%d-%d`, os.Getpid(), time.Now().UnixNano())
	}
	return filepath.Join(testdir.Temp(t), "s", "t.sock")
}

// TestSocket: a client dials the listener, and the server sees the
// client's user as its own; with nothing listening, Dial says
// ErrNoListener, before the listener exists and after it is closed.
func TestSocket(t *testing.T) {
	path := socketPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := platform.Dial(ctx, path); !errors.Is(err, platform.ErrNoListener) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial before Listen = %v, want ErrNoListener", err)
	}
	l, err := platform.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type accepted struct {
		peer platform.Peer
		err  error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- accepted{err: err}
			return
		}
		defer c.Close()
		p, err := platform.PeerOf(c)
		got <- accepted{peer: p, err: err}
		_, _ = io.Copy(io.Discard, c)
	}()
	c, err := platform.Dial(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	var a accepted
	select {
	case a = <-got:
	case <-ctx.Done():
		t.Fatal("the listener accepted nothing")
	}
	c.Close()
	self, err := platform.CurrentUser()
	if err != nil {
		t.Fatal(err)
	}
	if a.err != nil || a.peer.User != self {
		t.Errorf("PeerOf = %+v, %v; want user %s %s", a.peer, a.err, platform.UserKind, self)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := platform.Dial(ctx, path); !errors.Is(err, platform.ErrNoListener) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial after Close = %v, want ErrNoListener", err)
	}
}

// TestPeerOfOther: a connection that is not a local socket's has no peer
// to tell.
func TestPeerOfOther(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if p, err := platform.PeerOf(a); err == nil {
		t.Errorf("PeerOf(net.Pipe) = %+v, want an error", p)
	}
}

// TestSelf: this process is alive under its own reference, and not under
// one with another start time.
func TestSelf(t *testing.T) {
	r := platform.Self()
	if r.Pid != os.Getpid() || r.Start == 0 {
		t.Fatalf("Self() = %+v, want pid %d with a start time", r, os.Getpid())
	}
	if !platform.Alive(r) {
		t.Errorf("Alive(Self()) = false")
	}
	if other := (platform.Ref{Pid: r.Pid, Start: r.Start + 1}); platform.Alive(other) {
		t.Errorf("Alive(%+v) = true: another start time is another process", other)
	}
}
