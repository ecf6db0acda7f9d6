//go:build windows

package platform

import (
	"errors"
	"fmt"
)

func watchWrites(dir string) (WriteWatch, error) {
	return nil, fmt.Errorf("watching %s for writes on windows: %w", dir, errors.ErrUnsupported)
}
