//go:build unix

package unix

import (
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// NotifyManager sends state, newline-separated sd_notify assignments such
// as "READY=1", to the service manager's notification socket (systemd's
// $NOTIFY_SOCKET): one datagram, as sd_notify(3) sends it. A socket
// starting with '@' is in the abstract namespace.
func NotifyManager(socket, state string) error {
	name := socket
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("the service manager's socket %s: %w", socket, err)
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("telling the service manager %q: %w", state, err)
	}
	return nil
}

// Monotonic returns CLOCK_MONOTONIC, which sd_notify's MONOTONIC_USEC
// reads.
func Monotonic() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
