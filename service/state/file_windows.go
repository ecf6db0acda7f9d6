package state

import (
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
