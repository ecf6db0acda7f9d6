//go:build !unix && !windows

package api

import (
	"errors"
	"fmt"
	"runtime"
)

// SocketPath: this system has no local API transport.
func SocketPath(profile string) (string, error) {
	return "", fmt.Errorf("local API on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
