package unix

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// chmodOwnerAt gives the directory name (relative to dirfd) its owner's
// rwx when this user owns it, without following a link: it is opened
// O_PATH, which needs no permission on it, and changed through
// /proc/self/fd, since fchmod refuses an O_PATH descriptor.
func chmodOwnerAt(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if int(st.Uid) != os.Geteuid() {
		return nil
	}
	return os.Chmod(selfFdPath(fd), fs.FileMode(st.Mode&0o777|0o700))
}
