//go:build unix || windows

package upgrade

import (
	"net"
	"os"

	"github.com/tether-dev/tether/guardian"
)

// Inheritance is the part of a handover that differs by OS: what a
// service hands over besides its agents' tethers (the service lock and
// the API's listening socket), and how its successor takes it.
// inherit_unix.go (execve in place, the same pid) and
// inherit_windows.go (another process, handles duplicated into it)
// implement it; New makes one for a service that starts afresh, and
// Inherited the one a successor takes over. Beside it each OS has
// Separate, AttachLater, Await, ClaimGuardian, Attachment and
// readRecord.
type Inheritance interface {
	// TakeOver fills in rec's descriptors (the lock, listener and every
	// tether), writes rec (in memory, or else at path), and makes
	// target the service, with extraEnv added to its environment. It
	// returns only when target did not take over: then nothing was
	// inherited and the service goes on.
	TakeOver(target string, listener net.Listener, rec *Record, extraEnv []string, path string) error
	// Prepared, in a successor, tells the service before that this one
	// takes over from now: it is about to read the tethers.
	Prepared() error
	// TookOver, in a successor, runs once the tethers are sessions
	// again.
	TookOver(sessions []*guardian.Session, logf func(string, ...any))
	// Served, in a successor, closes what the service before held for
	// it to close once it serves.
	Served()
	// Recall, in a successor, stops the stand-in that answered during
	// the handover, if any, and returns the connections it held, their
	// requests unread: the successor serves them first.
	Recall() ([]net.Conn, error)
	// Lock is the service lock, held.
	Lock() *os.File
}

var _ Inheritance = (*inheritance)(nil)

// NewOffer is the offer of a service that runs cfg with guardians of
// the protocol versions guardians.
func NewOffer(cfg Config, guardians []int) Offer {
	return Offer{Handover: Version, Guardian: guardians, Config: cfg}
}
