//go:build !unix && !windows

package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
)

// SocketPath: this system has no local API transport.
func SocketPath(profile string) (string, error) {
	return "", fmt.Errorf("local API on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func dialSocket(context.Context, string) (net.Conn, error) {
	return nil, fmt.Errorf("local API on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
