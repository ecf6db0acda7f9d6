//go:build unix

package localapi

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	punix "github.com/tether-dev/tether/platform/unix"
)

// leakOptions: every goroutine a test starts must be gone at its end.
var leakOptions []goleak.Option

// shortDir returns a new directory with a short path (unix sockets allow
// about 100 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testPath returns a socket path of its own for the test.
func testPath(t *testing.T) string {
	return filepath.Join(shortDir(t), "s", "t.sock")
}

func listen(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := punix.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

// brokenPipe tells whether err is a write to, or a read from, a
// connection the server closed.
func brokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// listenerGone fails the test unless the socket file is gone.
func listenerGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after Shutdown: %v", err)
	}
}
