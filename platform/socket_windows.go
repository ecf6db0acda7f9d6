//go:build windows

package platform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"time"

	pwin "github.com/tether-dev/tether/platform/windows"
)

const userKind = "user"

// dialWait bounds how long a dial waits while every instance of the pipe
// is taken: a unix socket's connect does not wait for a full backlog
// either, and a server that accepts nobody for this long is stuck.
const dialWait = 5 * time.Second

func listen(name string) (net.Listener, error) { return pwin.ListenPipe(name) }

// dial: no pipe of that name is ErrNoListener.
func dial(ctx context.Context, name string) (net.Conn, error) {
	c, err := pwin.DialPipe(ctx, name, dialWait)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w on %s", ErrNoListener, name)
	}
	if errors.Is(err, pwin.ErrForeignPipe) {
		return nil, &UntrustedError{Path: name, Reason: err.Error()}
	}
	return c, err
}

// peerOf: the pipe's security descriptor already keeps other users from
// opening it; this check holds even where the descriptor is not enforced
// (Wine stores it but does not check it).
func peerOf(c net.Conn) (Peer, error) {
	p, err := pwin.PipeClient(c)
	return Peer{User: p.SID, PID: p.PID}, err
}

func currentUser() (string, error) { return pwin.UserSID() }
