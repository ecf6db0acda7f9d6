//go:build unix

package unix

import (
	"os"

	"golang.org/x/sys/unix"
)

// Pollable turns a socket descriptor into an *os.File served by the
// runtime's poller: reads and writes block only the goroutine, deadlines
// work, and EINTR never surfaces. It keeps the package net (and with it
// cgo's start-up cost) out of the guardian.
func Pollable(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func pair(fds [2]int) (*os.File, *os.File, error) {
	a, err := Pollable(fds[0], "socketpair-0")
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, err
	}
	return a, os.NewFile(uintptr(fds[1]), "socketpair-1"), nil
}
