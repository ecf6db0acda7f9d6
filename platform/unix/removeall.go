//go:build unix

package unix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RemoveAll removes path and everything below it without following a
// link, like os.RemoveAll; a path that does not exist is not an error.
//
//   - An empty directory, the usual private directory of an agent, costs
//     one rmdir: os.RemoveAll would try unlink first, and each of the two
//     takes the lock of the parent directory, which every agent of a
//     profile shares and hundreds of guardians may want at once.
//   - A directory whose removal is refused for lack of permission (an
//     agent that made a directory of its own 0500, with files in it) gets
//     its owner's permissions back: each directory below path that this
//     user owns is made u+rwx, walking down without following a link, and
//     the removal is tried again. What still cannot be removed is the
//     error.
func RemoveAll(path string) error {
	if err := unix.Rmdir(path); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	err := os.RemoveAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if rerr := restoreOwnerAccess(path); rerr != nil {
		return fmt.Errorf("%w (giving the directories back their owner's permissions: %v)", err, rerr)
	}
	return os.RemoveAll(path)
}

// restoreOwnerAccess adds u+rwx to the directory at path and to every
// directory below it that the effective user owns. Each is opened with
// O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor and changed
// through its own descriptor, so a link is never followed and an entry
// swapped for a link meanwhile is not opened. The first error is
// returned; the walk goes on past it.
func restoreOwnerAccess(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EACCES) {
			// Not even readable: the parent is ours to open it
			// without reading it first.
			if err := chmodOwnerAt(unix.AT_FDCWD, path); err != nil {
				return err
			}
			fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return restoreBelow(fd, path, os.Geteuid())
}

// restoreBelow restores the owner's access of the open directory fd
// (named path in errors) and of the directories below it; it closes fd.
func restoreBelow(fd int, path string, uid int) error {
	defer unix.Close(fd)
	var first error
	note := func(err error) {
		if first == nil {
			first = err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if int(st.Uid) == uid && st.Mode&0o700 != 0o700 {
		if err := unix.Fchmod(fd, uint32(st.Mode)&0o7777|0o700); err != nil {
			note(&os.PathError{Op: "chmod", Path: path, Err: err})
		}
	}
	entries, err := readDirFD(fd, path)
	if err != nil {
		note(err)
	}
	for _, e := range entries {
		if !e.dir {
			continue
		}
		sub := filepath.Join(path, e.name)
		cfd, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EACCES) {
			if err = chmodOwnerAt(fd, e.name); err == nil {
				cfd, err = unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
				note(&os.PathError{Op: "open", Path: sub, Err: err})
			}
			continue
		}
		if err := restoreBelow(cfd, sub, uid); err != nil {
			note(err)
		}
	}
	return first
}

// dirEntry is one entry of a directory (read by readDirFD here, and by
// readDir on Linux): its name and whether it is a directory itself.
type dirEntry struct {
	name string
	dir  bool
}

// readDirFD lists the open directory fd (named path in errors) through a
// duplicate of it, leaving fd open and where it was.
func readDirFD(fd int, path string) ([]dirEntry, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: path, Err: err}
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	des, err := f.ReadDir(-1)
	out := make([]dirEntry, 0, len(des))
	for _, d := range des {
		out = append(out, dirEntry{name: d.Name(), dir: d.IsDir()})
	}
	return out, err
}
