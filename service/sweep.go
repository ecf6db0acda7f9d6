package service

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
)

// sweepPrivateDirs removes, before any agent starts, the private
// directories of the profile that no live guardian holds: those left by
// a guardian that was killed before its teardown, or whose removal
// failed. A directory a live guardian's owner record names (one that
// outlived an earlier service, still stopping or retrying its cleanup) is
// its own and stays, and so does anything not named as tether names
// private directories. It returns one line per directory removed or left,
// for the service's log.
func sweepPrivateDirs(p Paths) []string {
	entries, err := os.ReadDir(p.PrivateRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("looking for private directories left by earlier runs: %v", err)}
	}
	var notes []string
	for _, e := range entries {
		key, ok := guardian.PrivateDirKey(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(p.PrivateRoot, e.Name())
		h, err := guardian.InspectKey(p.LockDir, key)
		switch {
		case err != nil:
			notes = append(notes, fmt.Sprintf("left the private directory %s as it is: its owner record cannot be read: %v", path, err))
		case h != nil && h.PrivateDir == path:
			// A live guardian's.
		default:
			if err := platform.RemoveAll(path); err != nil {
				notes = append(notes, fmt.Sprintf("could not remove the private directory %s left by an earlier run: %v", path, err))
			} else {
				notes = append(notes, fmt.Sprintf("removed the private directory %s left by an earlier run", path))
			}
		}
	}
	return notes
}
