//go:build !unix && !windows

package platform

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// unsupported is the error of every operation on a system with neither
// half.
func unsupported(what string) error {
	return fmt.Errorf("%s on %s: %w", what, runtime.GOOS, errors.ErrUnsupported)
}

var errLocked = errors.New("lock is held by another process")

const lockDataOffset = 0

func openLockFile(path string) (*os.File, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: unsupported("lock files")}
}

func tryLock(f *os.File) error {
	return &os.PathError{Op: "lock", Path: f.Name(), Err: unsupported("lock files")}
}

func unlock(f *os.File) error {
	return &os.PathError{Op: "unlock", Path: f.Name(), Err: unsupported("lock files")}
}
