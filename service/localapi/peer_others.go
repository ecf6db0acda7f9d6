//go:build !unix

package localapi

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// peerOf cannot tell who is calling here, so every request is refused:
// the Windows server (a named pipe with a user-only security descriptor)
// is not built yet.
func peerOf(net.Conn) (uid, pid int, err error) {
	return -1, 0, fmt.Errorf("peer credentials on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
