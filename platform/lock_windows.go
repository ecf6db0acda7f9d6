//go:build windows

package platform

import (
	"os"

	pwin "github.com/tether-dev/tether/platform/windows"
)

// LockFileEx on the file's first byte, mandatory.
var errLocked = pwin.ErrFileLocked

const lockDataOffset = 1

func openLockFile(path string) (*os.File, error) { return pwin.OpenLockFile(path) }
func tryLock(f *os.File) error                   { return pwin.TryLockFile(f) }
func unlock(f *os.File) error                    { return pwin.UnlockFile(f) }
