//go:build unix

package unix

import (
	"os"
	"path/filepath"
	"testing"
)

// NotifyManager sends one datagram from this process, as sd_notify does.
func TestNotifyManager(t *testing.T) {
	d, err := ListenDatagram(filepath.Join(t.TempDir(), "n", "notify"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := NotifyManager(d.Path(), "READY=1\nSTATUS=up"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, from, trunc, err := d.Receive(buf)
	if err != nil || trunc || string(buf[:n]) != "READY=1\nSTATUS=up" {
		t.Fatalf("received %q (truncated %v): %v", buf[:n], trunc, err)
	}
	if from.PID != 0 && from.PID != os.Getpid() {
		t.Errorf("sender pid %d, want %d", from.PID, os.Getpid())
	}
	if err := NotifyManager(filepath.Join(t.TempDir(), "none"), "READY=1"); err == nil {
		t.Error("a notification to no socket succeeded")
	}
	if Monotonic() <= 0 {
		t.Error("no monotonic clock")
	}
}
