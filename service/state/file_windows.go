package state

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// openNoFollow opens path for reading. Windows has no O_NOFOLLOW: readFile
// has refused a link (or junction) by Lstat, and checks after the open that
// the file is the one it examined.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }

// replace moves tmp over path with MOVEFILE_WRITE_THROUGH, which returns
// only once the move is on disk: Windows cannot sync a directory, and this
// is its way to make the rename durable.
func replace(tmp, path string) error {
	from, err := windows.UTF16PtrFromString(tmp)
	if err != nil {
		return err
	}
	to, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	if err := windows.MoveFileEx(from, to, windows.MOVEFILE_REPLACE_EXISTING|windows.MOVEFILE_WRITE_THROUGH); err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return nil
}

// syncDir does nothing: a directory cannot be synced on Windows; replace
// has made the rename durable with MOVEFILE_WRITE_THROUGH.
func syncDir(string) error { return nil }

// checkOwner does nothing on Windows: the directory lives in the user's
// profile, whose ACL already keeps other users out.
func checkOwner(string, fs.FileInfo) error { return nil }

// openAppend opens path for appending, creating it when it is missing;
// created says it did. Windows has no O_NOFOLLOW: a link found by Lstat
// is refused, and the file opened is checked to be the one examined.
func openAppend(path string) (f *os.File, created bool, err error) {
	if fi, err := os.Lstat(path); err == nil {
		if err := checkRegular(path, fi); err != nil {
			return nil, false, err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		created = true
	} else {
		return nil, false, err
	}
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if created {
		flags |= os.O_EXCL
	}
	if f, err = os.OpenFile(path, flags, 0o600); err != nil {
		return nil, false, err
	}
	if err := checkOpened(path, f); err != nil {
		return nil, false, err
	}
	return f, created, nil
}
