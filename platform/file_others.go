//go:build !unix && !windows

package platform

import (
	"fmt"
	"os"
	"time"
)

type unsafeFileError struct {
	Path   string
	Reason string
}

func (e *unsafeFileError) Error() string {
	return fmt.Sprintf("%s: refusing to use it: %s", e.Path, e.Reason)
}

func secureDir(path string) error {
	return &os.PathError{Op: "securedir", Path: path, Err: unsupported("private directories")}
}

func mkdirPrivate(path string) error {
	return &os.PathError{Op: "mkdir", Path: path, Err: unsupported("private directories")}
}

func openAppendNoFollow(path string) (*os.File, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: unsupported("private files")}
}

func removeAll(path string) error { return os.RemoveAll(path) }

func changeTime(os.FileInfo) time.Time { return time.Time{} }
