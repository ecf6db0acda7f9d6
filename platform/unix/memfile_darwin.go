//go:build darwin

package unix

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// NewMemFile fails with errors.ErrUnsupported outside Linux.
func NewMemFile(name string, data []byte) (*os.File, string, error) {
	return nil, "", fmt.Errorf("a file in memory on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// MemFileDescriptor: no path names one outside Linux.
func MemFileDescriptor(path string) (int, bool) { return 0, false }
