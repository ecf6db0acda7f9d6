//go:build unix

package platform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/platform"
)

// Dial refuses a socket in a directory other users may write in, or in
// a link, before it connects: another user could have put it there. A
// directory others may only read or search is the user's still.
func TestDialChecksTheSocketsDirectory(t *testing.T) {
	dir := filepath.Join(testdir.Temp(t), "s")
	path := filepath.Join(dir, "t.sock")
	l, err := platform.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := func(p string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := platform.Dial(ctx, p)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(path); err != nil {
		t.Fatalf("the user's own socket: %v", err)
	}
	for _, mode := range []os.FileMode{0o755, 0o711} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := dial(path); err != nil {
			t.Errorf("directory %04o: %v, want a connection", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o777, 0o720, 0o702} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		var ue *platform.UntrustedError
		if err := dial(path); !errors.Is(err, platform.ErrUntrusted) || !errors.As(err, &ue) || ue.Path != dir {
			t.Errorf("directory %04o: %v, want ErrUntrusted naming %s", mode, err, dir)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(filepath.Dir(dir), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := dial(filepath.Join(link, "t.sock")); !errors.Is(err, platform.ErrUntrusted) {
		t.Errorf("through a linked directory: %v, want ErrUntrusted", err)
	}
}
