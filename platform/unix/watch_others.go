//go:build unix && !linux

package unix

import (
	"errors"
	"fmt"
	"runtime"
)

// DirWatch is only available on Linux (inotify).
type DirWatch struct{}

// WatchRemovals fails outside Linux: callers fall back to their reload
// signal.
func WatchRemovals(dir string) (*DirWatch, error) {
	return nil, fmt.Errorf("watching %s on %s: %w", dir, runtime.GOOS, errors.ErrUnsupported)
}

// C is nil outside Linux.
func (w *DirWatch) C() <-chan struct{} { return nil }

// Close does nothing outside Linux.
func (w *DirWatch) Close() error { return nil }
