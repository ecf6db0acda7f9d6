//go:build unix

package api

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

func TestMain(m *testing.M) {
	testproc.Main(m, testproc.NoLeaks())
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestClientNotRunning(t *testing.T) {
	dir := shortDir(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, path := range map[string]string{
		"no socket":    filepath.Join(dir, "none.sock"),
		"no directory": filepath.Join(dir, "gone", "p.sock"),
		"stale socket": stale,
	} {
		c := NewClient(path)
		_, err := c.Status(ctx)
		if !errors.Is(err, ErrNotRunning) {
			t.Errorf("%s: Status = %v, want ErrNotRunning", name, err)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the socket", name, err)
		}
		if _, err := c.Events(ctx); !errors.Is(err, ErrNotRunning) {
			t.Errorf("%s: Events = %v, want ErrNotRunning", name, err)
		}
		if _, err := c.Start(ctx, "a"); !errors.Is(err, ErrNotRunning) {
			t.Errorf("%s: Start = %v, want ErrNotRunning", name, err)
		}
	}
}

// testListener listens on a fresh socket.
func testListener(t *testing.T) (net.Listener, string) {
	t.Helper()
	path := filepath.Join(shortDir(t), "p.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

func TestSocketPath(t *testing.T) {
	uid := strconv.Itoa(os.Geteuid())
	if runtime.GOOS == "linux" {
		t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
		if got, err := SocketPath("work"); err != nil || got != "/run/user/1234/tether/work.sock" {
			t.Errorf("with XDG_RUNTIME_DIR: %q, %v", got, err)
		}
		for _, v := range []string{"", "relative/dir"} {
			t.Setenv("XDG_RUNTIME_DIR", v)
			if got, err := SocketPath("default"); err != nil || got != "/tmp/tether-"+uid+"/default.sock" {
				t.Errorf("XDG_RUNTIME_DIR=%q: %q, %v", v, got, err)
			}
		}
		t.Setenv("XDG_RUNTIME_DIR", "/"+strings.Repeat("d", 60))
	} else {
		want := filepath.Join(os.TempDir(), "tether-"+uid, "default.sock")
		if got, err := SocketPath("default"); err != nil || got != want {
			t.Errorf("SocketPath = %q, %v, want %q", got, err, want)
		}
		t.Setenv("TMPDIR", "/"+strings.Repeat("d", 60))
	}
	long := strings.Repeat("p", 50)
	if got, err := SocketPath(long); err == nil || !strings.Contains(err.Error(), long+".sock") {
		t.Errorf("SocketPath of a too long path = %q, %v, want an error naming the path", got, err)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "-x", strings.Repeat("p", 65)} {
		if got, err := SocketPath(bad); err == nil {
			t.Errorf("SocketPath(%q) = %q, want an error", bad, got)
		}
	}
}
