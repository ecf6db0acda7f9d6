//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// ErrFileLocked reports that another handle holds the file's lock.
var ErrFileLocked = errors.New("file lock is held by another handle")

// OpenLockFile opens (creating it if needed) the file at path for reading
// and writing without following a reparse point (symbolic link or
// junction) in its last element, and refuses anything but a regular file.
// The handle is not inheritable and is shared for reading and writing, so
// that holders coordinate through TryLockFile.
func OpenLockFile(path string) (*os.File, error) {
	return openNoFollow(path, windows.GENERIC_READ|windows.GENERIC_WRITE, windows.OPEN_ALWAYS)
}

// OpenAppendNoFollow opens a log file for appending, creating it if
// needed, without following a reparse point in its last element.
func OpenAppendNoFollow(path string) (*os.File, error) {
	// FILE_APPEND_DATA without FILE_WRITE_DATA: every write goes to the
	// end, whoever else writes the file.
	return openNoFollow(path, windows.FILE_APPEND_DATA|windows.SYNCHRONIZE, windows.OPEN_ALWAYS)
}

func openNoFollow(path string, access, disposition uint32) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	h, err := windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, disposition, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "GetFileInformationByHandle", Path: path, Err: err}
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		windows.CloseHandle(h)
		return nil, &UnsafeFileError{Path: path, Reason: "is a reparse point (symbolic link or junction)"}
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0:
		windows.CloseHandle(h)
		return nil, &UnsafeFileError{Path: path, Reason: "is a directory"}
	case info.NumberOfLinks > 1:
		windows.CloseHandle(h)
		return nil, &UnsafeFileError{Path: path, Reason: fmt.Sprintf("has %d hard links", info.NumberOfLinks)}
	}
	return os.NewFile(uintptr(h), path), nil
}

// TryLockFile takes an exclusive lock on the file's first byte without
// waiting (LockFileEx). It returns ErrFileLocked when another handle, in
// this process or another, holds it. The lock goes with the handle: it is
// released by UnlockFile, by closing the handle, or by the death of the
// process.
func TryLockFile(f *os.File) error {
	ov := new(windows.Overlapped)
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ov)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return ErrFileLocked
	}
	return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
}

// UnlockFile releases a lock taken by TryLockFile.
func UnlockFile(f *os.File) error {
	ov := new(windows.Overlapped)
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ov); err != nil {
		return &os.PathError{Op: "UnlockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

// RemoveAll removes path and everything below it, like os.RemoveAll,
// which it tries first. Where that fails (os.RemoveAll deletes through
// FileDispositionInformationEx, which some Windows-compatible systems do
// not implement), it walks the tree itself and removes each entry with
// DeleteFile or RemoveDirectory, never descending into a reparse point: a
// junction or link is removed, not what it points to.
func RemoveAll(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	return removeTree(path)
}

func removeTree(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() && fi.Mode()&(os.ModeSymlink|os.ModeIrregular) == 0 {
		ents, err := os.ReadDir(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		var first error
		for _, e := range ents {
			if err := removeTree(filepath.Join(path, e.Name())); err != nil && first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	err = os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
