//go:build unix

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final link:
// O_NOFOLLOW closes the gap between readFile's Lstat and the open.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &UnsafePathError{Path: path, Reason: "is a symbolic link"}
	}
	return f, err
}

// replace renames tmp over path. rename(2) is atomic and replaces a link
// at path rather than writing through it.
func replace(tmp, path string) error { return os.Rename(tmp, path) }

// syncDir makes the rename durable: on Unix the directory entry is only on
// disk once the directory itself has been synced.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkOwner refuses a directory owned by another user: its owner could
// swap the state file under us.
func checkOwner(dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int64(st.Uid) != int64(uid) {
		return &UnsafePathError{Path: dir, Reason: fmt.Sprintf("is owned by uid %d, not by uid %d", st.Uid, uid)}
	}
	return nil
}
