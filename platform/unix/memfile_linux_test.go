package unix

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A file in memory holds what it was made with, is read by its path from
// the start, names its descriptor, and is closed at an exec.
func TestMemFile(t *testing.T) {
	f, path, err := NewMemFile("record", []byte("one\ntwo\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("read by %s: %q, %v", path, b, err)
	}
	if fd, ok := MemFileDescriptor(path); !ok || fd != int(f.Fd()) {
		t.Errorf("%s names descriptor %d (%v), want %d", path, fd, ok, f.Fd())
	}
	if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x, %v: want close-on-exec", flags, err)
	}
	for _, p := range []string{"/var/lib/tether/handover.json", "/proc/self/fd/x", "/proc/self/fd/1", "/proc/self/fd/"} {
		if fd, ok := MemFileDescriptor(p); ok {
			t.Errorf("%s names descriptor %d", p, fd)
		}
	}
}
