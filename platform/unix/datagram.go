//go:build unix

package unix

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Datagram is a unix datagram socket that receives short messages together
// with what the kernel says of their sender: the receiving end of
// sd_notify's $NOTIFY_SOCKET.
type Datagram struct {
	c    *net.UnixConn
	path string
	// creds says the kernel attaches the sender's credentials to each
	// datagram (SO_PASSCRED on Linux); without them Sender.PID is 0.
	creds bool
}

// Sender is what the kernel recorded of a datagram's sender.
type Sender struct {
	// PID is the sending process, 0 where the platform cannot say
	// (macOS has no credentials on datagrams).
	PID int
	UID int // -1 where unknown
	// pidfd is the sender's pidfd (SCM_PIDFD, Linux 6.5 and later), -1
	// without: it names the sender even after it exited, so Exited is
	// exact and PID cannot be reused while it is open.
	pidfd int
}

// Exited reports whether the sender has exited by now (a zombie counts).
// With the sender's pidfd the answer is exact; without, a PID that no
// process has is taken for an exit. A sender of unknown PID has not
// exited.
func (s *Sender) Exited() bool {
	if s.pidfd >= 0 {
		return pidfdExited(s.pidfd)
	}
	return s.PID > 0 && errors.Is(unix.Kill(s.PID, 0), unix.ESRCH)
}

// Close lets go of what names the sender; Receive's caller calls it once
// done with the sender.
func (s *Sender) Close() {
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
		s.pidfd = -1
	}
}

// ListenDatagram binds a datagram socket at path, in a directory that
// SecureDir accepts (0700, the user's own, no links). A stale socket of a
// dead listener is replaced; anything else at path is refused. The socket is
// made 0600. Close removes it.
func ListenDatagram(path string) (*Datagram, error) {
	if len(path) > maxSocketPath {
		return nil, &os.PathError{Op: "listen", Path: path, Err: fmt.Errorf("%w: %d bytes, the system allows %d", ErrSocketPathTooLong, len(path), maxSocketPath)}
	}
	if err := SecureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, &UnsafeFileError{Path: path, Reason: fmt.Sprintf("exists and is not a socket (mode %v)", fi.Mode())}
		}
		// A datagram socket cannot be dialled to tell a live one from a
		// stale one; the path is the caller's own, made unique per
		// start, so a socket left there is a dead run's.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	d := &Datagram{c: c, path: path}
	if err := os.Chmod(path, 0o600); err != nil {
		d.Close()
		return nil, err
	}
	if d.creds, err = passCredentials(c); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Path is where the socket is bound.
func (d *Datagram) Path() string { return d.path }

// Receive reads one datagram into buf and says who sent it; the caller
// closes the Sender. Descriptors sent with it (sd_notify_barrier sends
// one and waits for it to be closed) are closed at once. A datagram
// longer than buf is cut, and Truncated says so.
func (d *Datagram) Receive(buf []byte) (n int, from Sender, truncated bool, err error) {
	oob := make([]byte, oobSpace)
	n, oobn, flags, _, err := d.c.ReadMsgUnix(buf, oob)
	from = Sender{UID: -1, pidfd: -1}
	if err != nil {
		return 0, from, false, err
	}
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	for i := range msgs {
		if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		if fd, ok := parsePidfd(&msgs[i]); ok {
			from.Close()
			from.pidfd = fd
			continue
		}
		if pid, uid, ok := parseCredentials(&msgs[i]); ok {
			from.PID, from.UID = pid, uid
		}
	}
	return n, from, flags&unix.MSG_TRUNC != 0, nil
}

// Close stops receiving and removes the socket file.
func (d *Datagram) Close() error {
	err := d.c.Close()
	if rerr := os.Remove(d.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
