//go:build darwin

package unix

import (
	"net"

	"golang.org/x/sys/unix"
)

// oobSpace holds a few descriptors.
var oobSpace = unix.CmsgSpace(16 * 4)

// passCredentials: macOS and the BSDs attach no credentials to unix
// datagrams that x/sys can read, so a sender is known only by being able
// to reach the socket's 0700 directory, that is, by being the same user.
func passCredentials(*net.UnixConn) (bool, error) { return false, nil }

func parseCredentials(*unix.SocketControlMessage) (pid, uid int, ok bool) { return 0, 0, false }

func parsePidfd(*unix.SocketControlMessage) (int, bool) { return 0, false }

func pidfdExited(int) bool { return false }
