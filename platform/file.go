package platform

import (
	"os"
)

// UnsafeFileError reports a lock file or private directory that exists
// but is not what tether would have created: a link (on Windows, any
// reparse point), the wrong type, owner, link count or mode. Path names
// it, Reason says what is wrong with it.
type UnsafeFileError = unsafeFileError

// SecureDir makes sure path is a directory private to the current user.
// Missing directories are created; an existing one must be a plain
// directory (not a symbolic link or junction) owned by the user, and its
// access is set to the user's alone: mode 0700 on Unix, a protected DACL
// granting the user's SID alone on Windows.
func SecureDir(path string) error { return secureDir(path) }

// MkdirPrivate creates the directory path, whose parent must exist,
// private to the current user from the moment it exists (0700; on
// Windows a protected DACL inherited by what is created inside). It
// fails with an error matching fs.ErrExist when path exists.
func MkdirPrivate(path string) error { return mkdirPrivate(path) }

// OpenAppendNoFollow opens the file at path for appending, creating it
// private to the user (0600 on Unix) when it is missing, without
// following a symbolic link (on Windows, any reparse point) in its last
// element. Every write goes to the end, whoever else writes the file.
func OpenAppendNoFollow(path string) (*os.File, error) { return openAppendNoFollow(path) }

// RemoveAll removes path and everything below it, like os.RemoveAll,
// never following a link or junction; a path that does not exist is not
// an error. On Windows, where the handles of a process may be closed a
// moment after its job counts it gone and a file still open cannot be
// removed, it retries for up to two seconds; and where os.RemoveAll
// fails (some Windows-compatible systems lack the call it deletes with),
// it walks the tree itself.
func RemoveAll(path string) error { return removeAll(path) }
