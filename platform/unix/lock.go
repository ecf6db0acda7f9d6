//go:build unix

package unix

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrLocked reports that another open file description holds the lock.
var ErrLocked = errors.New("lock is held by another process")

// ErrSymlink reports that a lock file or log file path ends in a symbolic
// link. tether never follows one: a link could point the lock, the write
// of its owner record, or an agent's log, at a file of the attacker's
// choosing.
var ErrSymlink = errors.New("refusing to follow a symbolic link")

// UnsafeFileError reports a lock file or private directory that exists but
// is not what tether created: wrong type, owner, link count or mode.
type UnsafeFileError struct {
	Path   string
	Reason string
}

func (e *UnsafeFileError) Error() string {
	return fmt.Sprintf("%s: refusing to use it: %s", e.Path, e.Reason)
}

// OpenLockFile opens (creating it 0600 if needed) the lock file at path
// without following a final symbolic link, and checks that it is a regular
// file with one link, owned by the effective user and not readable or
// writable by anyone else. The returned file is close-on-exec.
func OpenLockFile(path string) (*os.File, error) {
	fd, err := openNoFollow(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	if err := checkOwnedRegular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openNoFollow opens path with the given flags without following a final
// symbolic link, retrying EINTR. A link is reported as ErrSymlink.
func openNoFollow(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EMLINK) && isSymlink(path):
			return -1, &os.PathError{Op: "open", Path: path, Err: ErrSymlink}
		case errors.Is(err, unix.EISDIR):
			return -1, &UnsafeFileError{Path: path, Reason: "is a directory"}
		default:
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

func isSymlink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func checkOwnedRegular(f *os.File, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &UnsafeFileError{Path: path, Reason: "not a regular file"}
	case int(st.Uid) != os.Geteuid():
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("owned by uid %d, not %d", st.Uid, os.Geteuid())}
	case st.Nlink != 1:
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("has %d hard links", st.Nlink)}
	case st.Mode&0o077 != 0:
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("mode %#o is open to other users", st.Mode&0o777)}
	}
	return nil
}

// TryLock takes an exclusive flock on f without blocking. It returns
// ErrLocked when another open file description holds it.
func TryLock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrLocked
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// Unlock releases a flock taken by TryLock. Closing every descriptor of the
// open file description releases it too.
func Unlock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_UN)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// SecureDir makes sure path is a directory private to the effective user:
// it creates missing directories 0700, refuses a symbolic link or a
// directory owned by someone else, and tightens the mode of its own
// directory to 0700.
func SecureDir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return &UnsafeFileError{Path: path, Reason: "is a symbolic link"}
	}
	if !fi.IsDir() {
		return &UnsafeFileError{Path: path, Reason: "not a directory"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafeFileError{Path: path, Reason: "cannot read its owner"}
	}
	if int(st.Uid) != os.Geteuid() {
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("owned by uid %d, not %d", st.Uid, os.Geteuid())}
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(path, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// OpenAppendNoFollow opens a log file for appending without following a
// final symbolic link (ErrSymlink), creating it 0600.
func OpenAppendNoFollow(path string) (*os.File, error) {
	fd, err := openNoFollow(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}
