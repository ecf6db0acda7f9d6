//go:build unix

package state

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tether-dev/tether/platform"
)

func TestDirectoryOfAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	var ue *UnsafePathError
	if _, err := Open(dir, platform.OpenAppendNoFollow); !errors.As(err, &ue) || ue.Path != dir {
		t.Fatalf("Open(a directory of uid 4242) = %v, want an *UnsafePathError", err)
	}
}

func TestFifoStateFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, FileName), 0o600); err != nil {
		t.Skip(err)
	}
	s := open(t, dir)
	if err := s.Err(); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Err = %v, want ErrUnsafe", err)
	}
}
