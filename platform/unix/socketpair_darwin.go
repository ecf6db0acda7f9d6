//go:build darwin

package unix

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// SocketPair returns a connected pair of stream sockets, both close-on-exec;
// the first end is non-blocking and served by the runtime's poller.
// Without SOCK_CLOEXEC, holding syscall.ForkLock across creation and
// marking keeps a concurrent fork+exec from inheriting either end.
func SocketPair() (*os.File, *os.File, error) {
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return pair(fds)
}
