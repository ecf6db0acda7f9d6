//go:build unix || windows

package service

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/platform"
)

// RunningPID returns the pid of the service that runs profile p, read
// from its service.lock, for a client that finds no socket: ok is false
// when no service holds the lock. The lock is tried, and let go at once
// when it was free: a service starting at that very moment would find
// it held and exit, so only a client that already failed to connect
// asks.
func RunningPID(p Paths) (pid int, ok bool) {
	path := filepath.Join(p.StateDir, "service.lock")
	if _, err := os.Lstat(path); err != nil {
		return 0, false
	}
	f, err := platform.OpenLockFile(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	err = platform.TryLock(f)
	if err == nil {
		_ = platform.Unlock(f)
		return 0, false
	}
	if !errors.Is(err, platform.ErrLocked) {
		return 0, false
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, platform.LockDataOffset, 64))
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
