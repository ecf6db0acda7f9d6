//go:build unix

package platform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	punix "github.com/tether-dev/tether/platform/unix"
)

const userKind = "uid"

func listen(path string) (net.Listener, error) { return punix.ListenUnix(path) }

// dial: no socket file, or one nobody listens on, is ErrNoListener; a
// directory or a listener that is not the user's is ErrUntrusted.
func dial(ctx context.Context, path string) (net.Conn, error) {
	if err := checkSocketDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOTDIR)) {
		return nil, fmt.Errorf("%w on %s (%w)", ErrNoListener, path, unwrapOpError(err))
	}
	if err != nil {
		return nil, err
	}
	uid, _, err := punix.PeerUID(c.(*net.UnixConn))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("who listens on %s: %w", path, err)
	}
	if uid != os.Geteuid() {
		c.Close()
		return nil, &UntrustedError{Path: path, Owner: strconv.Itoa(uid),
			Reason: fmt.Sprintf("the process listening on it runs as uid %d, not as this user (uid %d)", uid, os.Geteuid())}
	}
	return c, nil
}

// checkSocketDir refuses a socket directory in which another user could
// have put the socket: one another user made first (/tmp/tether-<uid>),
// a link, or one others may write in. A missing directory is left to
// the dial, which finds nothing listening.
func checkSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var owner uint32 = 0xffffffff
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = st.Uid
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UntrustedError{Path: dir, Reason: "the socket's directory is a symbolic link"}
	case int(owner) != os.Geteuid():
		return &UntrustedError{Path: dir, Owner: strconv.Itoa(int(owner)),
			Reason: fmt.Sprintf("the socket's directory is owned by uid %d, not by this user (uid %d)", owner, os.Geteuid())}
	case !fi.IsDir():
		return nil // the user's own file: nothing listens below it
	case fi.Mode().Perm()&0o022 != 0:
		// Others could put a socket of theirs in it. (Reading or
		// searching it, 0755 or 0711, lets nobody else in.)
		return &UntrustedError{Path: dir, Reason: fmt.Sprintf("the socket's directory is mode %04o: other users may write in it", fi.Mode().Perm())}
	}
	return nil
}

// unwrapOpError drops the *net.OpError around a dial's cause: its text
// repeats the path.
func unwrapOpError(err error) error {
	if oe, ok := errors.AsType[*net.OpError](err); ok {
		return oe.Err
	}
	return err
}

// peerOf takes a unix socket connection, or one that wraps it and
// gives its descriptor (SyscallConn).
func peerOf(c net.Conn) (Peer, error) {
	sc, ok := c.(syscall.Conn)
	if a := c.LocalAddr(); !ok || a == nil || a.Network() != "unix" {
		return Peer{}, fmt.Errorf("%T is not a unix socket connection", c)
	}
	uid, pid, err := punix.PeerUID(sc)
	return Peer{User: strconv.Itoa(uid), PID: pid}, err
}

func currentUser() (string, error) { return strconv.Itoa(os.Geteuid()), nil }
