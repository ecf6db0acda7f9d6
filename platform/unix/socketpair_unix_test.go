//go:build unix

package unix

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSocketPairCloseOnExec(t *testing.T) {
	a, b, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	for _, f := range []*os.File{a, b} {
		if !closeOnExec(t, f) {
			t.Errorf("%s is not close-on-exec: a child spawned now would inherit it", f.Name())
		}
		typ, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_TYPE)
		if err != nil || typ != unix.SOCK_STREAM {
			t.Errorf("%s: socket type %d, %v; want SOCK_STREAM", f.Name(), typ, err)
		}
	}
	// Connected both ways, and closing one end is EOF at the other: the
	// owner-death signal the tether relies on.
	for _, p := range [][2]*os.File{{a, b}, {b, a}} {
		if _, err := p[0].Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(p[1], buf); err != nil || string(buf) != "ping\n" {
			t.Fatalf("read %q, %v", buf, err)
		}
	}
	a.Close()
	if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("read after the other end closed = %d, %v; want EOF", n, err)
	}
}
