package demo

import (
	"time"

	"golang.org/x/sys/unix"
)

// reapOrphans waits for the children adopted as a subreaper, up to within.
func reapOrphans(within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			return
		}
		if pid <= 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
