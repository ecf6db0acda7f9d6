package unix

import (
	"encoding/binary"
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// oobSpace holds the credentials, the sender's pidfd and a few
// descriptors.
var oobSpace = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(4) + unix.CmsgSpace(16*4)

// soPassPidfd is SO_PASSPIDFD (Linux 6.5), which x/sys does not name
// yet: asm-generic's value, the one of amd64 and arm64.
const soPassPidfd = 76

// passCredentials asks the kernel to attach SCM_CREDENTIALS to every
// datagram: the sender's pid and uid as the kernel knows them (a process
// can claim another pid only with CAP_SYS_ADMIN); and, where the kernel
// has it, SCM_PIDFD, a pidfd of the sender that outlives it. An older
// kernel refuses SO_PASSPIDFD, and the pid alone names the sender.
func passCredentials(c *net.UnixConn) (bool, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return false, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1); serr == nil {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, soPassPidfd, 1)
		}
	}); err != nil {
		return false, err
	}
	if serr != nil {
		return false, os.NewSyscallError("setsockopt SO_PASSCRED", serr)
	}
	return true, nil
}

// parsePidfd returns the descriptor of an SCM_PIDFD message.
func parsePidfd(m *unix.SocketControlMessage) (int, bool) {
	if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_PIDFD || len(m.Data) < 4 {
		return 0, false
	}
	return int(int32(binary.NativeEndian.Uint32(m.Data))), true
}

// pidfdExited reports whether the process of pidfd has exited: its pidfd
// polls readable from then on.
func pidfdExited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if !errors.Is(err, unix.EINTR) {
			return n > 0
		}
	}
}

func parseCredentials(m *unix.SocketControlMessage) (pid, uid int, ok bool) {
	cr, err := unix.ParseUnixCredentials(m)
	if err != nil {
		return 0, 0, false
	}
	return int(cr.Pid), int(cr.Uid), true
}
