//go:build unix && !linux && !darwin

package unix

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// PeerUID is not implemented on this system: a server must then refuse
// every connection, never assume the peer is the user.
func PeerUID(c *net.UnixConn) (uid int, pid int, err error) {
	return -1, 0, fmt.Errorf("peer credentials on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
