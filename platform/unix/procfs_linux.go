package unix

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// The scans of /proc and of cgroups read many small files and directories,
// and the teardown of a tree scans it several times. They read them with
// the bare system calls: open, read (or getdents) until the end, close.
// os.Open on Linux also tries to hand every file to the runtime's poller,
// which refuses them (two fcntl to set non-blocking, an epoll_ctl that
// fails, two fcntl to set it back), and os.ReadFile adds an fstat: nine or
// ten calls for a file where four do.

// readSmall returns the contents of the file at path, read into buf's
// spare room (grown when the file is larger).
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := open(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := buf[:0]
	for {
		if cap(b)-len(b) < 512 {
			b = slices.Grow(b, max(512, cap(b)))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// readDir returns the entries of the directory at path, "." and ".."
// left out. An entry's dir is the type getdents reports (which /proc and
// cgroup2 always fill in).
func readDir(path string) ([]dirEntry, error) {
	fd, err := open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var out []dirEntry
	var buf [8192]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "getdents", Path: path, Err: err}
		case n == 0:
			return out, nil
		}
		out = appendDirents(out, buf[:n])
	}
}

// appendDirents appends the entries of b, a run of struct linux_dirent64
// (ino 8, off 8, reclen 2, type 1, then the name and its NUL).
func appendDirents(out []dirEntry, b []byte) []dirEntry {
	const nameOff = 19
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			return out
		}
		name := b[nameOff:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if s := string(name); s != "." && s != ".." {
			out = append(out, dirEntry{name: s, dir: b[18] == unix.DT_DIR})
		}
		b = b[reclen:]
	}
	return out
}

// open opens path with flags, retrying EINTR; its error is an
// *os.PathError, which matches fs.ErrNotExist for a missing file.
func open(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}
