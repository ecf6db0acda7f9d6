//go:build unix

package unix

import "golang.org/x/sys/unix"

// CloseLater closes fds, descriptors handed over by HoldSlowToClose's
// process before its execve, on a goroutine of its own: the wait of each
// close holds up nothing else.
func CloseLater(fds []uintptr) {
	if len(fds) == 0 {
		return
	}
	go func() {
		for _, fd := range fds {
			_ = unix.Close(int(fd))
		}
	}()
}
