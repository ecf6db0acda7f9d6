//go:build unix

package platform

import (
	"os"

	punix "github.com/tether-dev/tether/platform/unix"
)

// A flock on the whole file, advisory.
var errLocked = punix.ErrLocked

const lockDataOffset = 0

func openLockFile(path string) (*os.File, error) { return punix.OpenLockFile(path) }
func tryLock(f *os.File) error                   { return punix.TryLock(f) }
func unlock(f *os.File) error                    { return punix.Unlock(f) }
