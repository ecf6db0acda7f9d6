//go:build unix

package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

const userKind = "uid"

func listen(path string) (net.Listener, error) { return punix.ListenUnix(path) }

// dial: no socket file, or one nobody listens on, is ErrNoListener.
func dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)) {
		return nil, fmt.Errorf("%w on %s (%w)", ErrNoListener, path, unwrapOpError(err))
	}
	return c, err
}

// unwrapOpError drops the *net.OpError around a dial's cause: its text
// repeats the path.
func unwrapOpError(err error) error {
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return oe.Err
	}
	return err
}

func peerOf(c net.Conn) (Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Peer{}, fmt.Errorf("%T is not a unix socket connection", c)
	}
	uid, pid, err := punix.PeerUID(uc)
	return Peer{User: strconv.Itoa(uid), PID: pid}, err
}

func currentUser() (string, error) { return strconv.Itoa(os.Geteuid()), nil }
