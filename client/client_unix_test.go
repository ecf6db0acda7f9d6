//go:build unix

package client

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
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
		c := New(path)
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
