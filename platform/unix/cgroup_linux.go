package unix

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is a cgroup v2 directory that holds exactly one agent tree.
type Cgroup struct {
	Path string
	fd   int // O_PATH descriptor for CLONE_INTO_CGROUP; -1 when closed
}

// ErrNoCgroup reports that no writable cgroup v2 hierarchy is available to
// this process; callers fall back to session containment.
var ErrNoCgroup = errors.New("no writable cgroup v2")

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted, and the
// root of the hierarchy that mount shows.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		line := s.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 {
			return unescapeMount(f[4]), unescapeMount(f[3]), nil
		}
	}
	return "", "", ErrNoCgroup
}

// unescapeMount undoes the octal escapes of /proc/self/mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// OwnCgroupDir returns the directory of the calling process's cgroup v2,
// below which NewCgroup creates the agents' cgroups.
func OwnCgroupDir() (string, error) {
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("0::")); ok {
			rel := string(rest)
			if root != "/" {
				r, ok := strings.CutPrefix(rel, root)
				if !ok {
					return "", ErrNoCgroup
				}
				rel = r
			}
			return filepath.Join(mount, rel), nil
		}
	}
	return "", ErrNoCgroup
}

// NewCgroup creates a cgroup named name below the calling process's own
// cgroup and opens it for CLONE_INTO_CGROUP. It returns ErrNoCgroup (wrapped)
// when there is no cgroup v2 or it is not writable here.
func NewCgroup(name string) (*Cgroup, error) {
	dir, err := OwnCgroupDir()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	return NewCgroupIn(dir, name)
}

// NewCgroupIn is NewCgroup below dir, the calling process's own cgroup
// found earlier by OwnCgroupDir.
func NewCgroupIn(dir, name string) (*Cgroup, error) {
	path := filepath.Join(dir, name)
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		// The kill file must be there and writable, or teardown could
		// not use it.
		err = unix.Access(filepath.Join(path, "cgroup.kill"), unix.W_OK)
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		os.Remove(path)
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	return &Cgroup{Path: path, fd: fd}, nil
}

// OpenCgroup refers to an existing cgroup recorded earlier, after checking
// that path lies inside the cgroup v2 hierarchy.
func OpenCgroup(path string) (*Cgroup, error) {
	mount, _, err := cgroup2Mount()
	if err != nil {
		return nil, err
	}
	clean := filepath.Clean(path)
	if !strings.HasPrefix(clean, mount+string(filepath.Separator)) {
		return nil, fmt.Errorf("%s: not inside the cgroup v2 hierarchy at %s", path, mount)
	}
	if _, err := os.Stat(filepath.Join(clean, "cgroup.procs")); err != nil {
		return nil, err
	}
	return &Cgroup{Path: clean, fd: -1}, nil
}

func (c *Cgroup) apply(attr *syscall.SysProcAttr) error {
	if c == nil {
		return nil
	}
	if c.fd < 0 {
		return fmt.Errorf("cgroup %s is not open for spawning", c.Path)
	}
	attr.UseCgroupFD = true
	attr.CgroupFD = c.fd
	return nil
}

// CloseSpawnFD releases the descriptor kept for spawning into the cgroup.
func (c *Cgroup) CloseSpawnFD() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// Pids lists the processes in the cgroup and below it.
func (c *Cgroup) Pids() ([]int, error) {
	var pids []int
	err := c.walk(func(dir string) error {
		more, err := procsIn(dir)
		pids = append(pids, more...)
		return err
	})
	return pids, err
}

// ownPids lists the processes in the cgroup itself, not those of the
// cgroups below it.
func (c *Cgroup) ownPids() ([]int, error) { return procsIn(c.Path) }

// procsIn reads the cgroup.procs of the cgroup directory dir; a cgroup
// removed meanwhile has none.
func procsIn(dir string) ([]int, error) {
	b, err := readSmall(filepath.Join(dir, "cgroup.procs"), nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var pids []int
	for f := range bytes.FieldsSeq(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// walk calls fn for the cgroup's directory and each of its descendants,
// parents first. A directory removed meanwhile is skipped.
func (c *Cgroup) walk(fn func(dir string) error) error {
	queue := []string{c.Path}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		if err := fn(dir); err != nil {
			return err
		}
		entries, err := readDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		for _, e := range entries {
			if e.dir {
				queue = append(queue, filepath.Join(dir, e.name))
			}
		}
	}
	return nil
}

// Populated reports whether any live process is left in the cgroup or
// below it, as the kernel counts them (cgroup.events): one read, where
// listing the processes takes one per directory. A process counts until
// it has exited; a zombie does not.
func (c *Cgroup) Populated() (bool, error) {
	b, err := readSmall(filepath.Join(c.Path, "cgroup.events"), nil)
	if err != nil {
		return false, err
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("populated ")); ok {
			return string(bytes.TrimSpace(v)) != "0", nil
		}
	}
	return false, fmt.Errorf("%s/cgroup.events: no populated line", c.Path)
}

// Kill sends SIGKILL to every process in the cgroup through cgroup.kill,
// which the kernel makes safe against concurrent forks.
func (c *Cgroup) Kill() error {
	path := filepath.Join(c.Path, "cgroup.kill")
	fd, err := open(path, unix.O_WRONLY|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("1")); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// Remove deletes the cgroup directory and any empty child cgroups the tree
// created. It fails with EBUSY while a process remains.
func (c *Cgroup) Remove() error {
	c.CloseSpawnFD()
	// Most trees make no cgroup of their own: one rmdir, no walk.
	if err := unix.Rmdir(c.Path); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var dirs []string
	_ = c.walk(func(dir string) error {
		dirs = append(dirs, dir)
		return nil
	})
	var first error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := rmdirSettled(dirs[i]); err != nil && first == nil {
			first = &os.PathError{Op: "rmdir", Path: dirs[i], Err: err}
		}
	}
	return first
}

// rmdirSettled removes a cgroup directory. Right after its last process
// died the kernel may still count the cgroup as populated for a moment
// (EBUSY); it retries for a short, bounded time.
func rmdirSettled(dir string) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}
