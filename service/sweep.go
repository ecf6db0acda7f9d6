package service

import (
	"fmt"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
)

// sweepPrivateDirs removes, before any agent starts, the private
// directories of the profile that no live guardian holds: those left by
// a guardian that was killed before its teardown, or whose removal
// failed. A directory a live guardian's owner record names (one that
// outlived an earlier service, still stopping or retrying its cleanup) is
// its own and stays, and so does anything not named as tether names
// private directories. The identities' directories left empty go too. It
// returns one line per private directory removed or left, for the
// service's log.
func sweepPrivateDirs(p Paths) []string {
	dirs, err := guardian.PrivateDirs(p.PrivateRoot)
	var notes []string
	if err != nil {
		notes = append(notes, fmt.Sprintf("looking for private directories left by earlier runs: %v", err))
	}
	for _, d := range dirs {
		h, err := guardian.InspectKey(p.LockDir, d.Key)
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("left the private directory %s as it is: its owner record cannot be read: %v", d.Path, err))
		case h != nil && h.PrivateDir == d.Path:
			// A live guardian's.
		default:
			if err := platform.RemoveAll(d.Path); err != nil {
				notes = append(notes, fmt.Sprintf("could not remove the private directory %s left by an earlier run: %v", d.Path, err))
			} else {
				notes = append(notes, fmt.Sprintf("removed the private directory %s left by an earlier run", d.Path))
			}
		}
	}
	guardian.RemoveEmptyIdentityDirs(p.PrivateRoot)
	return notes
}
