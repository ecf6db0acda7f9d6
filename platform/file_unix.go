//go:build unix

package platform

import (
	"os"

	punix "github.com/tether-dev/tether/platform/unix"
)

type unsafeFileError = punix.UnsafeFileError

func secureDir(path string) error                      { return punix.SecureDir(path) }
func mkdirPrivate(path string) error                   { return os.Mkdir(path, 0o700) }
func openAppendNoFollow(path string) (*os.File, error) { return punix.OpenAppendNoFollow(path) }
func removeAll(path string) error                      { return punix.RemoveAll(path) }
