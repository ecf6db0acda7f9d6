package unix

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// xucredVersion is XUCRED_VERSION of <sys/ucred.h>, which x/sys does not
// export: a struct of another version is not one this code can read.
const xucredVersion = 0

// PeerUID returns the effective uid and the pid of the process at the other
// end of c, a unix socket connection (or one that wraps it), as the
// kernel recorded them when the connection was made
// (LOCAL_PEERCRED, LOCAL_PEERPID). The pid is 0 when the kernel does not
// report it (LOCAL_PEERPID appeared in macOS 10.8); the uid is what
// callers check.
func PeerUID(c syscall.Conn) (uid int, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Xucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr == nil {
			if p, perr := unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID); perr == nil {
				pid = p
			}
		}
	}); err != nil {
		return -1, 0, err
	}
	if serr != nil {
		return -1, 0, os.NewSyscallError("getsockopt LOCAL_PEERCRED", serr)
	}
	if cred.Version != xucredVersion {
		return -1, 0, os.NewSyscallError("getsockopt LOCAL_PEERCRED", unix.EINVAL)
	}
	return int(cred.Uid), pid, nil
}
