//go:build !unix && !windows

package localapi

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

const userKind = "user"

// selfUser and peerOf cannot tell users apart here, so every request is
// refused.
func selfUser() (string, error) {
	return "", fmt.Errorf("users on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func peerOf(net.Conn) peer {
	return peer{err: fmt.Errorf("peer credentials on %s: %w", runtime.GOOS, errors.ErrUnsupported)}
}
