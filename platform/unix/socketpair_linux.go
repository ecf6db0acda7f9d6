package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// SocketPair returns a connected pair of stream sockets, both close-on-exec
// from birth, so no child spawned concurrently can inherit either end. The
// first end is non-blocking and served by the runtime's poller (deadlines
// work on it); the second is left blocking, to be handed to a child.
func SocketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return pair(fds)
}
