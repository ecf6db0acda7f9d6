package netwatch

import (
	"context"
	"os"

	"golang.org/x/sys/unix"
)

// groups are the netlink multicast groups of link, address and route
// changes, both families.
const groups = unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR |
	unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE

// watch subscribes to the kernel's rtnetlink groups and calls notify on
// each message, until ctx is done. The socket is non-blocking and read
// through the runtime's poller, so closing it ends the read.
func watch(ctx context.Context, notify func()) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return err
	}
	return read(ctx, os.NewFile(uintptr(fd), "rtnetlink"), notify)
}
