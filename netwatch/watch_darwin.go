package netwatch

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// watch opens a routing socket, on which the kernel writes a message for
// every change of interfaces, addresses and routes, and calls notify on
// each, until ctx is done.
func watch(ctx context.Context, notify func()) error {
	fd, err := unix.Socket(unix.AF_ROUTE, unix.SOCK_RAW, unix.AF_UNSPEC)
	if err != nil {
		return err
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	return read(ctx, os.NewFile(uintptr(fd), "route"), notify)
}
