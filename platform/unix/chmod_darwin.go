//go:build darwin

package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// chmodOwnerAt gives the directory name (relative to dirfd) its owner's
// rwx when this user owns it, without following a link
// (AT_SYMLINK_NOFOLLOW, which macOS's fchmodat honours).
func chmodOwnerAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "fstatat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return nil
	}
	if err := unix.Fchmodat(dirfd, name, uint32(st.Mode&0o777|0o700), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}
