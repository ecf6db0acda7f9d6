//go:build unix

package api

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	uid := strconv.Itoa(os.Geteuid())
	if runtime.GOOS == "linux" {
		t.Setenv("XDG_RUNTIME_DIR", "/run/user/1234")
		if got, err := SocketPath("work"); err != nil || got != "/run/user/1234/tether/work.sock" {
			t.Errorf("with XDG_RUNTIME_DIR: %q, %v", got, err)
		}
		for _, v := range []string{"", "relative/dir"} {
			t.Setenv("XDG_RUNTIME_DIR", v)
			if got, err := SocketPath("default"); err != nil || got != "/tmp/tether-"+uid+"/default.sock" {
				t.Errorf("XDG_RUNTIME_DIR=%q: %q, %v", v, got, err)
			}
		}
		t.Setenv("XDG_RUNTIME_DIR", "/"+strings.Repeat("d", 60))
	} else {
		want := filepath.Join(os.TempDir(), "tether-"+uid, "default.sock")
		if got, err := SocketPath("default"); err != nil || got != want {
			t.Errorf("SocketPath = %q, %v, want %q", got, err, want)
		}
		t.Setenv("TMPDIR", "/"+strings.Repeat("d", 60))
	}
	long := strings.Repeat("p", 50)
	if got, err := SocketPath(long); err == nil || !strings.Contains(err.Error(), long+".sock") {
		t.Errorf("SocketPath of a too long path = %q, %v, want an error naming the path", got, err)
	}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "-x", strings.Repeat("p", 65)} {
		if got, err := SocketPath(bad); err == nil {
			t.Errorf("SocketPath(%q) = %q, want an error", bad, got)
		}
	}
}
