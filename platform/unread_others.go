//go:build !linux

package platform

import "net"

func unread(net.Conn) (int, bool) { return 0, false }
