//go:build unix

package api

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// SocketPath returns where the service of profile listens:
//
//   - Linux: $XDG_RUNTIME_DIR/tether/<profile>.sock, or
//     /tmp/tether-<uid>/<profile>.sock when XDG_RUNTIME_DIR is unset (or
//     not absolute, which the XDG spec says to ignore).
//   - macOS and other Unix systems: $TMPDIR/tether-<uid>/<profile>.sock;
//     on macOS $TMPDIR is already private to the user.
//
// The service creates the directory 0700 and refuses one owned by another
// uid. A path longer than a unix socket can have is an error naming it.
func SocketPath(profile string) (string, error) {
	if err := checkProfile(profile); err != nil {
		return "", err
	}
	uid := strconv.Itoa(os.Geteuid())
	var dir string
	switch d := os.Getenv("XDG_RUNTIME_DIR"); {
	case runtime.GOOS == "linux" && filepath.IsAbs(d):
		dir = filepath.Join(d, "tether")
	case runtime.GOOS == "linux":
		// Not os.TempDir: $TMPDIR may be long, and /tmp is where a user
		// without a runtime directory looks.
		dir = filepath.Join("/tmp", "tether-"+uid)
	default:
		dir = filepath.Join(os.TempDir(), "tether-"+uid)
	}
	path := filepath.Join(dir, profile+".sock")
	if limit := maxSocketPath(); len(path) > limit {
		return "", fmt.Errorf("socket path %s is %d bytes, longer than the %d a unix socket allows: use a shorter profile name", path, len(path), limit)
	}
	return path, nil
}

// maxSocketPath is sun_path's size less its terminating NUL.
func maxSocketPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103
}
