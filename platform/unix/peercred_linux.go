package unix

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerUID returns the effective uid and the pid of the process at the other
// end of c, a unix socket connection (or one that wraps it), as the
// kernel recorded them when the connection was made
// (SO_PEERCRED). They describe the connecting process, not whoever holds
// the descriptor now.
func PeerUID(c syscall.Conn) (uid int, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, 0, err
	}
	if serr != nil {
		return -1, 0, os.NewSyscallError("getsockopt SO_PEERCRED", serr)
	}
	return int(cred.Uid), int(cred.Pid), nil
}
