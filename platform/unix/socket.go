//go:build unix

package unix

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSocketInUse reports that a process answers on the socket path: another
// service is running there, or is claiming the path at this very moment.
var ErrSocketInUse = errors.New("socket is in use by another running service")

// ErrSocketPathTooLong reports a socket path longer than bind(2) accepts.
var ErrSocketPathTooLong = errors.New("socket path is too long")

// maxSocketPath is the longest socket path, in bytes, that ListenUnix and
// a dial accept: sun_path less its terminating NUL, 107 on Linux and 103
// on macOS and the BSDs.
var maxSocketPath = len(unix.RawSockaddrUnix{}.Path) - 1

// staleDialTimeout bounds the dial that tells a live socket from a stale
// one. A unix-domain connect does not wait for the peer to accept: it
// succeeds, is refused or finds the backlog full at once.
const staleDialTimeout = 2 * time.Second

// ListenUnix listens on the unix socket at path, reachable by the
// effective user only (I5):
//
//   - The parent directory is created 0700, or tightened to 0700, and
//     refused when it is a symbolic link or owned by another uid
//     (SecureDir).
//   - A socket left at path is dialled first: if a process answers, the
//     error is ErrSocketInUse and nothing is touched; if nobody does (a
//     stale socket of a dead service) it is removed. A symbolic link, or
//     anything else that is not a socket, is neither followed nor removed:
//     it is an *UnsafeFileError.
//   - The socket is chmod 0600 once bound.
//
// Two services claiming the same path at once are serialised by a flock
// on path+".lock", held from the stale check until the new socket listens,
// so neither can remove the other's live socket; the loser gets
// ErrSocketInUse. A path longer than bind(2) takes (107 bytes on Linux, 103 on macOS) is refused with
// ErrSocketPathTooLong, naming the path.
//
// Closing the listener removes the socket file.
func ListenUnix(path string) (*net.UnixListener, error) {
	if len(path) > maxSocketPath {
		return nil, &os.PathError{Op: "listen", Path: path, Err: fmt.Errorf(
			"%w: %d bytes, the system allows %d; use a shorter runtime or temporary directory", ErrSocketPathTooLong, len(path), maxSocketPath)}
	}
	if err := SecureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	lock, err := OpenLockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	// Closing the only descriptor of the lock file releases the flock.
	defer lock.Close()
	if err := TryLock(lock); err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, &os.PathError{Op: "listen", Path: path, Err: fmt.Errorf("%w (it is being claimed right now)", ErrSocketInUse)}
		}
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// bind(2) creates the socket file with mode 0777 less the umask, and
	// changing the process-wide umask would race with every other
	// goroutine creating files. The window between bind and this chmod
	// is closed by the directory instead: SecureDir has just made it
	// 0700 and owned by us, connect(2) needs search permission on every
	// directory of the path, and no other uid can rename, replace or
	// reach an entry in it. So the socket is never reachable by another
	// user, whatever its mode, and chmod (which would follow a link) acts
	// on the file we just bound. The 0600 keeps it user-only should the
	// directory's mode ever be widened.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// removeStale removes the socket at path if no process listens on it. It
// runs with the path's lock held, in a directory only the user can change,
// so the entry it inspects is the entry it removes.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		// Dialling would follow it; removing it would hide whatever set
		// it up. Neither is ours to decide.
		return &UnsafeFileError{Path: path, Reason: "is a symbolic link, not a socket"}
	case fi.Mode()&fs.ModeSocket == 0:
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("exists and is not a socket (mode %v)", fi.Mode())}
	}
	c, err := net.DialTimeout("unix", path, staleDialTimeout)
	switch {
	case err == nil:
		c.Close()
		return &os.PathError{Op: "listen", Path: path, Err: ErrSocketInUse}
	case errors.Is(err, syscall.EAGAIN):
		// Listening, with a full backlog: very much alive.
		return &os.PathError{Op: "listen", Path: path, Err: ErrSocketInUse}
	case errors.Is(err, syscall.ENOENT):
		return nil
	case errors.Is(err, syscall.ECONNREFUSED):
		// Stale: its service died without removing it.
	default:
		return fmt.Errorf("checking whether %s is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}
