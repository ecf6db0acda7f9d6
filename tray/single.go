package tray

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/platform"
)

// errAnotherTray reports that a tray of the same profile already runs on
// the same display.
var errAnotherTray = errors.New("a tray of this profile already runs on this display")

// trayLockPath is the lock file that makes a tray the only one of its
// profile on its display: in the profile's state directory, named after
// the display (X11's DISPLAY or Wayland's WAYLAND_DISPLAY; none on
// Windows and macOS, where a user's desktop is one).
func trayLockPath(stateDir string) string {
	display := os.Getenv("WAYLAND_DISPLAY")
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	name := "tray"
	if display != "" {
		name += "-" + strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
				return r
			}
			return '_'
		}, display)
	}
	return filepath.Join(stateDir, name+".lock")
}

// claimTray takes the tray lock at path for as long as the process runs,
// and writes this process's pid in it. When another tray holds it, the
// error wraps errAnotherTray and names that tray's pid where it can be
// read.
func claimTray(path string) (*os.File, error) {
	if err := platform.SecureDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := platform.OpenLockFile(path)
	if err != nil {
		return nil, err
	}
	if err := platform.TryLock(f); err != nil {
		if !errors.Is(err, platform.ErrLocked) {
			f.Close()
			return nil, err
		}
		pid := holderPid(f)
		f.Close()
		if pid > 0 {
			return nil, fmt.Errorf("%w (pid %d)", errAnotherTray, pid)
		}
		return nil, errAnotherTray
	}
	if err := f.Truncate(platform.LockDataOffset); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), platform.LockDataOffset)
	}
	return f, nil
}

// holderPid is the pid the tray holding f's lock wrote, or 0.
func holderPid(f *os.File) int {
	b, err := io.ReadAll(io.NewSectionReader(f, platform.LockDataOffset, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}
