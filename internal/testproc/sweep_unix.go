//go:build unix

package testproc

import (
	"errors"

	"golang.org/x/sys/unix"
)

// reapChildren reaps every zombie child of this process.
func reapChildren() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
