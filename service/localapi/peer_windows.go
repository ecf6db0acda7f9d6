package localapi

import (
	"net"

	pwindows "github.com/tether-dev/tether/platform/windows"
)

// userKind is what names a user in refusals.
const userKind = "user"

// selfUser returns the SID of the user the service runs as, the only one
// let in.
func selfUser() (string, error) { return pwindows.UserSID() }

// peerOf returns the user SID of the token the client of c presented when
// it opened the pipe, and its pid. The pipe's security descriptor already
// keeps other users from opening it; this check holds even where the
// descriptor is not enforced (Wine stores it but does not check it).
func peerOf(c net.Conn) peer {
	p, err := pwindows.PipeClient(c)
	return peer{user: p.SID, pid: p.PID, err: err}
}
