package netwatch

import (
	"context"
	"net"
)

// Changes returns a channel that receives a value soon after the OS
// reports a change of links, addresses or routes, until ctx is done:
// bursts are coalesced (the channel holds one value). ok is false when
// the OS's signal could not be had (no netlink, a sandbox): the caller
// then relies on its own bounded re-check alone.
func Changes(ctx context.Context) (ch <-chan struct{}, ok bool) {
	c := make(chan struct{}, 1)
	notify := func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	if err := watch(ctx, notify); err != nil {
		return c, false
	}
	return c, true
}

// Up reports whether a network other than loopback is up with an
// address that reaches beyond its link: the least any remote host needs.
func Up() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
				return true
			}
		}
	}
	return false
}
