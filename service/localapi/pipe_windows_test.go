package localapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/windows"

	pwin "github.com/tether-dev/tether/platform/windows"
)

// leakOptions: every goroutine a test starts must be gone at its end, but
// go-winio's completion port has one goroutine for the life of the
// process.
var leakOptions = []goleak.Option{goleak.IgnoreAnyFunction("github.com/Microsoft/go-winio.ioCompletionProcessor")}

var pipeSeq atomic.Int64

// testPath returns a pipe name of its own for the test.
func testPath(t *testing.T) string {
	return fmt.Sprintf(`\\.\pipe\tether-localapi-test-%d-%d`, os.Getpid(), pipeSeq.Add(1))
}

func listen(t *testing.T, path string) net.Listener {
	t.Helper()
	l, err := pwin.ListenPipe(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func dial(ctx context.Context, path string) (net.Conn, error) {
	return pwin.DialPipe(ctx, path, waitLimit)
}

// brokenPipe tells whether err is a write to, or a read from, a
// connection the server closed.
func brokenPipe(err error) bool {
	return errors.Is(err, windows.ERROR_NO_DATA) || errors.Is(err, windows.ERROR_BROKEN_PIPE) ||
		errors.Is(err, windows.ERROR_PIPE_NOT_CONNECTED)
}

// listenerGone fails the test unless the pipe is gone.
func listenerGone(t *testing.T, path string) {
	t.Helper()
	if _, err := dial(context.Background(), path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pipe is still there after Shutdown: %v", err)
	}
}
