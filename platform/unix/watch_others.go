//go:build unix && !linux && !darwin

package unix

import (
	"errors"
	"fmt"
	"runtime"
)

// osWatch has no OS half here.
type osWatch struct{}

// WatchWrites fails with errors.ErrUnsupported: this system's watch is
// not implemented; callers look at the files at a pace of their own.
func WatchWrites(dir string) (*WriteWatch, error) {
	return nil, fmt.Errorf("watching %s for writes on %s: %w", dir, runtime.GOOS, errors.ErrUnsupported)
}

func (osWatch) arm(*WriteWatch) error { return errors.ErrUnsupported }
func (osWatch) close() error          { return nil }
