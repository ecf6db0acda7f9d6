package tray

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOneTrayPerProfileAndDisplay(t *testing.T) {
	// Not t.TempDir: under Wine a lock file once locked may not be
	// removable at the test's end.
	dir, err := os.MkdirTemp("", "tether-tray-lock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	t.Setenv("WAYLAND_DISPLAY", "")
	t.Setenv("DISPLAY", ":7.0")
	path := trayLockPath(dir)
	if got, want := filepath.Base(path), "tray-_7.0.lock"; got != want {
		t.Errorf("the lock of display :7.0 is %s, want %s", got, want)
	}
	first, err := claimTray(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = claimTray(path)
	if !errors.Is(err, errAnotherTray) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("a second tray of the profile: %v, want %v naming pid %d", err, errAnotherTray, os.Getpid())
	}
	// Another display has its own tray.
	t.Setenv("WAYLAND_DISPLAY", "wayland-1")
	other, err := claimTray(trayLockPath(dir))
	if err != nil {
		t.Fatalf("a tray on another display: %v", err)
	}
	other.Close()
	first.Close()
	again, err := claimTray(path)
	if err != nil {
		t.Fatalf("a tray after the first quit: %v", err)
	}
	again.Close()
}
