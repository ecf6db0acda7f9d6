package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// ErrNoListener reports a dial where nothing listens: there is no socket
// or pipe of that name (or no directory holding it), or only the socket
// file of a listener that died.
var ErrNoListener = errors.New("nothing listens")

// ErrUntrusted reports a dial that was refused before anything was sent
// because what it would reach is not the current user's alone (I5, the
// client's half): on Unix the socket's directory is another user's, a
// link, or writable by others, or the process listening on the socket runs
// as another user (anyone may create /tmp/tether-<uid> first); on
// Windows the pipe was created by another user. Its error is an
// *UntrustedError.
var ErrUntrusted = errors.New("refusing to talk to a listener that is not this user's")

// UntrustedError says why a dial was refused with ErrUntrusted.
type UntrustedError struct {
	Path string // the socket, its directory or the pipe
	// Owner is who holds Path, named as CurrentUser names users (a uid
	// on Unix), when the problem is its owner.
	Owner  string
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Path, e.Reason, ErrUntrusted)
}

// Is makes every *UntrustedError match ErrUntrusted.
func (e *UntrustedError) Is(target error) bool { return target == ErrUntrusted }

// Listen listens on the local socket at path, reachable by the current
// user only (I5): on Unix a unix socket, mode 0600 in a directory made
// private by SecureDir, whose stale file (nobody answers a dial) is
// replaced and whose live one is refused; on Windows a named pipe
// (\\.\pipe\...) with a protected DACL granting the user alone, refusing
// remote clients and a name another process serves. Closing the listener
// removes the socket file or the pipe.
func Listen(path string) (net.Listener, error) { return listen(path) }

// Dial connects to the listener at path, and returns the connection only
// once it is known to be the current user's: nothing has been sent on it
// yet. Nothing listening there is an error matching ErrNoListener; a
// listener of another user, an error matching ErrUntrusted. On Unix the
// socket's directory must be a directory (not a link) owned by the user
// that no other user may write in, checked before the connect, and the
// listening process must run as the user (SO_PEERCRED, LOCAL_PEERCRED),
// checked after it. On Windows the client lets the server identify it (PeerOf)
// but not act as it, refuses a pipe that another user created, and
// waits up to 5 s while every instance of the pipe is taken (a unix
// connect never waits for a full backlog).
func Dial(ctx context.Context, path string) (net.Conn, error) { return dial(ctx, path) }

// Peer is who opened the client end of a connection.
type Peer struct {
	User string // as CurrentUser names users: a uid on Unix, a SID on Windows
	PID  int    // the client's process id, or 0 when the system does not say
}

// PeerOf returns who opened the client end of c, a connection accepted
// by a listener of Listen, as the system recorded it when the connection
// was made (SO_PEERCRED, LOCAL_PEERCRED, the token a pipe client
// presents), not whoever holds the client end now. A system that cannot
// tell returns an error: a server must then refuse the connection, never
// assume that the peer is the user.
func PeerOf(c net.Conn) (Peer, error) { return peerOf(c) }

// CurrentUser returns the user this process runs as, named as Peer names
// users: its effective uid on Unix, its SID on Windows.
func CurrentUser() (string, error) { return currentUser() }

// UserKind is what names a user in messages: "uid" on Unix, "user"
// elsewhere.
const UserKind = userKind
