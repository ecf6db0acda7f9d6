package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pwin "github.com/tether-dev/tether/platform/windows"
)

var pipeSeq atomic.Int64

// testListener listens on a fresh named pipe.
func testListener(t *testing.T) (net.Listener, string) {
	t.Helper()
	path := fmt.Sprintf(`\\.\pipe\tether-api-test-%d-%d`, os.Getpid(), pipeSeq.Add(1))
	l, err := pwin.ListenPipe(path)
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

func TestClientNotRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, path := testListener(t)
	l.Close()
	c := New(path)
	_, err := c.Status(ctx)
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Status = %v, want ErrNotRunning", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the pipe", err)
	}
	if _, err := c.Events(ctx); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Events = %v, want ErrNotRunning", err)
	}
	if _, err := c.Start(ctx, "a"); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Start = %v, want ErrNotRunning", err)
	}
}
