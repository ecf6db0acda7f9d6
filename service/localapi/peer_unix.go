//go:build unix

package localapi

import (
	"fmt"
	"net"
	"os"
	"strconv"

	punix "github.com/tether-dev/tether/platform/unix"
)

// userKind is what names a user in refusals.
const userKind = "uid"

// selfUser returns the effective uid, the only one let in.
func selfUser() (string, error) { return strconv.Itoa(os.Geteuid()), nil }

// peerOf returns the uid and pid of the process that opened c.
func peerOf(c net.Conn) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{err: fmt.Errorf("%T is not a unix socket connection", c)}
	}
	uid, pid, err := punix.PeerUID(uc)
	return peer{user: strconv.Itoa(uid), pid: pid, err: err}
}
