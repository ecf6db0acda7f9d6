package platform

import "net"

// Unread reports how many bytes have arrived on c and not been read, and
// whether the OS can tell (a socket's SIOCINQ on Linux; elsewhere it
// does not say).
func Unread(c net.Conn) (n int, ok bool) { return unread(c) }
