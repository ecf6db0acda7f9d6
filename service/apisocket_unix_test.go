//go:build unix

package service

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/internal/testproc"
)

// A socket made again while the API is paused (a handover's deadline
// set) is paused too, and the handover takes the socket that serves then.
func TestRemadeSocketKeepsThePause(t *testing.T) {
	dir := filepath.Join(testdir.Temp(t), "s")
	path := filepath.Join(dir, "t.sock")
	a, err := listenAPI(path, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first := a.current()
	if err := a.SetDeadline(time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 10*time.Second, func() bool { return a.current() != first },
		"the removed socket %s was never made again", path)
	if currentListener(a) == first {
		t.Fatal("a handover would take the socket that was removed")
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := a.Accept()
		if c != nil {
			c.Close()
		}
		accepted <- err
	}()
	select {
	case err := <-accepted:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Accept on the new socket while paused: %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept on the new socket did not end: the pause was lost")
	}
	if err := a.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("the new socket after the pause: %v", err)
	}
	defer c.Close()
	got, err := a.Accept()
	if err != nil {
		t.Fatalf("Accept after the pause: %v", err)
	}
	got.Close()
}
