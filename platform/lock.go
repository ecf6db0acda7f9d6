package platform

import "os"

// ErrLocked reports that another open file, in this process or another,
// holds a lock file's lock.
var ErrLocked = errLocked

// LockDataOffset is where data that others may read while a lock file is
// locked can begin: a flock is advisory and covers nothing (0), while a
// Windows lock is mandatory and covers the first byte, which no other
// handle may then read (1).
const LockDataOffset = lockDataOffset

// OpenLockFile opens the lock file at path, creating it if needed, without
// following a symbolic link (on Windows, any reparse point) in its last
// element, and refuses anything but a regular file with one link; on Unix
// it must also be owned by the effective user and closed to others (it is
// created 0600). The file is not inherited by children.
func OpenLockFile(path string) (*os.File, error) { return openLockFile(path) }

// TryLock takes f's exclusive lock without waiting, or returns ErrLocked
// when another open file holds it. The lock goes with the open file: it
// is released by Unlock, by closing the file (on Unix, every descriptor
// of it), or by the death of the process.
func TryLock(f *os.File) error { return tryLock(f) }

// Unlock releases a lock taken by TryLock.
func Unlock(f *os.File) error { return unlock(f) }
