package usermanager

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// hierarchies returns the directory of the calling process's cgroup in
// the cgroup v2 hierarchy and, on a hybrid layout, in the v1 name=systemd
// hierarchy (empty on a pure v2 layout). The manager's cgroups are made
// below them.
func hierarchies() (v2, v1 string, err error) {
	if v2, err = punix.OwnCgroupDir(); err != nil {
		return "", "", err
	}
	mount, root, err := namedSystemdMount()
	if err != nil || mount == "" {
		return v2, "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	// The line is "N:name=systemd:/path".
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if _, rest, ok := bytes.Cut(line, []byte(":name=systemd:")); ok {
			rel, _ := strings.CutPrefix(string(rest), strings.TrimSuffix(root, "/"))
			return v2, filepath.Join(mount, rel), nil
		}
	}
	return "", "", errors.New("/proc/self/cgroup has no name=systemd line")
}

// namedSystemdMount returns where the v1 name=systemd hierarchy is
// mounted and the root it shows; empty when it is not.
func namedSystemdMount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		pre, post, _ := strings.Cut(s.Text(), " - ")
		fs, ps := strings.Fields(pre), strings.Fields(post)
		if len(fs) >= 5 && len(ps) >= 3 && ps[0] == "cgroup" && hasOption(ps[2], "name=systemd") {
			return fs[4], fs[3], nil
		}
	}
	return "", "", s.Err()
}

func hasOption(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// delegate makes parent/name with children manager and session, and
// hands the directory and manager to the user the way systemd delegates
// a cgroup: the directory and the files that move processes and enable
// controllers are the user's, and so is everything in manager. session,
// like a login's session scope, stays root's: a process there can leave
// it for the manager's cgroups (their common ancestor is the user's) but
// cannot make cgroups of its own.
func delegate(parent, name string, uid, gid int) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	for _, sub := range []string{"manager", "session"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return dir, err
		}
	}
	if err := chownTree(filepath.Join(dir, "manager"), uid, gid); err != nil {
		return dir, err
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control", "tasks"} {
		err := os.Chown(filepath.Join(dir, f), uid, gid)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return dir, err
		}
	}
	return dir, nil
}

// killCgroup kills every process in the cgroup v2 dir and below, and
// waits until none is left.
func killCgroup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return err
	}
	var err error
	if testproc.UntilEvery(stopTimeout, 5*time.Millisecond, func() bool {
		var b []byte
		b, err = os.ReadFile(filepath.Join(dir, "cgroup.events"))
		return err != nil || bytes.Contains(b, []byte("populated 0"))
	}) {
		return err
	}
	return fmt.Errorf("still populated %v after cgroup.kill", stopTimeout)
}

// removeCgroupTree removes dir and every cgroup below it, deepest first.
// A cgroup whose last process just died may be busy for a moment.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		var err error
		testproc.UntilEvery(5*time.Second, 5*time.Millisecond, func() bool {
			err = unix.Rmdir(dirs[i])
			return !errors.Is(err, unix.EBUSY)
		})
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "rmdir", Path: dirs[i], Err: err}
		}
	}
	return nil
}
