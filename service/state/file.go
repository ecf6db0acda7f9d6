package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Temporary files are named tempPrefix + random + tempSuffix, in the state
// directory so that the rename over state.json stays on one file system.
// One left by a crash is never read, and is removed by the next write.
const (
	tempPrefix = ".state-"
	tempSuffix = ".tmp"
)

// ErrUnsafe reports a state directory or file that tether will not use
// because it is not what tether creates.
var ErrUnsafe = errors.New("unsafe state path")

// UnsafePathError says which path was refused and why.
type UnsafePathError struct {
	Path   string
	Reason string // e.g. "is a symbolic link"
}

func (e *UnsafePathError) Error() string {
	return fmt.Sprintf("%s: refusing to use it: %s", e.Path, e.Reason)
}

// Is makes every *UnsafePathError match ErrUnsafe.
func (e *UnsafePathError) Is(target error) bool { return target == ErrUnsafe }

// ensureDir creates dir (0700) if it is missing and checks that it is a
// real directory owned by the user.
func ensureDir(dir string) error {
	_, err := os.Lstat(dir)
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating the state directory: %w", err)
		}
		created = true
	}
	fi, err := os.Lstat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("the state directory: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafePathError{Path: dir, Reason: "is a symbolic link"}
	case !fi.IsDir():
		return &UnsafePathError{Path: dir, Reason: "is not a directory"}
	}
	if err := checkOwner(dir, fi); err != nil {
		return err
	}
	if created {
		// MkdirAll applied the umask; the directory is user-only, exactly.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("the state directory: %w", err)
		}
	}
	return nil
}

// checkRegular refuses anything but a regular file, a link above all.
func checkRegular(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &UnsafePathError{Path: path, Reason: "is a symbolic link"}
	case !fi.Mode().IsRegular():
		return &UnsafePathError{Path: path, Reason: "is not a regular file"}
	}
	return nil
}

// readFile returns the content of the file at path without following a
// link; nil, nil when there is no file (an empty file is a non-nil, empty
// slice). A file replaced between its check and its opening (the
// service's rename of a new state file, beside a reader) is read again,
// a few times.
func readFile(path string) ([]byte, error) {
	for range 5 {
		data, err := readFileOnce(path)
		if !errors.Is(err, errReplaced) {
			return data, err
		}
	}
	return nil, &UnsafePathError{Path: path, Reason: errReplaced.Error()}
}

// errReplaced is readFileOnce's word for a file replaced while it was
// being opened.
var errReplaced = errors.New("was replaced while being opened")

func readFileOnce(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := checkRegular(path, fi); err != nil {
		return nil, err
	}
	f, err := openNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		return nil, errReplaced
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// writeFile replaces the file at path with data atomically and durably:
// temporary file (O_EXCL, 0600), write, fsync, close, rename, fsync of the
// directory. renamed reports whether the new file took the old one's place,
// which it may have done even when err is a failure to sync the directory.
func writeFile(dir, path string, data []byte) (renamed bool, err error) {
	if fi, err := os.Lstat(path); err == nil {
		if err := checkRegular(path, fi); err != nil {
			return false, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*"+tempSuffix)
	if err != nil {
		return false, err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = replace(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, syncDir(dir)
}

// removeStaleTemps removes the temporary files a crash left behind. A
// failure only leaves clutter that the next write tries again.
func removeStaleTemps(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); e.Type().IsRegular() && strings.HasPrefix(n, tempPrefix) && strings.HasSuffix(n, tempSuffix) {
			os.Remove(filepath.Join(dir, n))
		}
	}
}

// checkOpened refuses, and closes, an opened file that is not a regular
// file or is no longer the one at path.
func checkOpened(path string, f *os.File) error {
	fi, err := f.Stat()
	if err == nil {
		err = checkRegular(path, fi)
	}
	if err == nil {
		if at, lerr := os.Lstat(path); lerr != nil || !os.SameFile(fi, at) {
			err = &UnsafePathError{Path: path, Reason: "was replaced while being opened"}
		}
	}
	if err != nil {
		f.Close()
	}
	return err
}
