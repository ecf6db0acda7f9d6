//go:build !unix

package platform

import (
	"errors"
	"fmt"
	"runtime"
)

func watchRemovals(dir string) (DirWatch, error) {
	return nil, fmt.Errorf("watching %s on %s: %w", dir, runtime.GOOS, errors.ErrUnsupported)
}
