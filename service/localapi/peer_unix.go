//go:build unix

package localapi

import (
	"fmt"
	"net"

	punix "github.com/tether-dev/tether/platform/unix"
)

// peerOf returns the uid and pid of the process that opened c.
func peerOf(c net.Conn) (uid, pid int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, 0, fmt.Errorf("%T is not a unix socket connection", c)
	}
	return punix.PeerUID(uc)
}
