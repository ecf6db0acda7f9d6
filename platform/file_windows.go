//go:build windows

package platform

import (
	"os"
	"time"

	pwin "github.com/tether-dev/tether/platform/windows"
)

type unsafeFileError = pwin.UnsafeFileError

// removeWait bounds the retries of removeAll.
const removeWait = 2 * time.Second

func secureDir(path string) error                      { return pwin.SecureDir(path) }
func mkdirPrivate(path string) error                   { return pwin.MkdirPrivate(path) }
func openAppendNoFollow(path string) (*os.File, error) { return pwin.OpenAppendNoFollow(path) }

// removeAll retries: a process's handles are closed as it dies, but
// Windows may finish closing them a moment after the job counts the
// process gone, and a file still open cannot be removed.
func removeAll(path string) error {
	deadline := time.Now().Add(removeWait)
	for {
		err := pwin.RemoveAll(path)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
