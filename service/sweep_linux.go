package service

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tether-dev/tether/guardian"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// sweepCgroups removes, before any agent starts, the empty cgroups that
// guardians made for their agents below this service's own cgroup and
// left: a guardian removes its agent's cgroup last, once it has let go of
// the identity, and one killed in between leaves the cgroup behind, named
// nowhere. rmdir(2) removes only a cgroup with no process and no cgroup
// below it, so a tree's cgroup is never taken from it. It returns one
// line per cgroup removed, for the service's log.
func sweepCgroups() []string {
	dir, err := punix.OwnCgroupDir()
	if err != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var notes []string
	for _, e := range entries {
		if _, ok := guardian.CgroupKey(e.Name()); !ok || !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if unix.Rmdir(path) == nil {
			notes = append(notes, fmt.Sprintf("removed the empty cgroup %s left by an earlier run", path))
		}
	}
	return notes
}
