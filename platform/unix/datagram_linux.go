package unix

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// oobSpace holds the credentials and a few descriptors.
var oobSpace = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(16*4)

// passCredentials asks the kernel to attach SCM_CREDENTIALS to every
// datagram: the sender's pid and uid as the kernel knows them (a process
// can claim another pid only with CAP_SYS_ADMIN).
func passCredentials(c *net.UnixConn) (bool, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return false, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return false, err
	}
	if serr != nil {
		return false, os.NewSyscallError("setsockopt SO_PASSCRED", serr)
	}
	return true, nil
}

func parseCredentials(m *unix.SocketControlMessage) (pid, uid int, ok bool) {
	cr, err := unix.ParseUnixCredentials(m)
	if err != nil {
		return 0, 0, false
	}
	return int(cr.Pid), int(cr.Uid), true
}
