package unix

import (
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

// A watch's inotify instance is listed as slow to close while it is
// open, and held open while it is listed: its Close waits for release.
// CloseLater closes what it is given.
func TestHoldSlowToClose(t *testing.T) {
	w, err := WatchWrites(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	fds, release := HoldSlowToClose()
	if !slices.Contains(fds, w.os.fd) {
		release()
		t.Fatalf("held %v, want the watch's descriptor %d among them", fds, w.os.fd)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		release()
		t.Fatalf("the watch closed (%v) while its descriptor was held", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not close once released")
	}
	fds, release = HoldSlowToClose()
	release()
	if slices.Contains(fds, w.os.fd) {
		t.Errorf("the closed watch's descriptor %d is still listed: %v", w.os.fd, fds)
	}

	// CloseLater: an inotify instance of this test's, closed in the
	// background.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	CloseLater([]uintptr{uintptr(fd)})
	if !testproc.Until(10*time.Second, func() bool {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		return errors.Is(err, unix.EBADF)
	}) {
		unix.Close(fd)
		t.Fatalf("descriptor %d is still open", fd)
	}
}
