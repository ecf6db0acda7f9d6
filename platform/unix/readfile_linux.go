package unix

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The scans of a tree read dozens of small files of /proc and of the
// cgroup file system. os.Open would also try to register each with the
// runtime's poller, which these files refuse (four more system calls a
// file, which made most of a scan's cost); these read them with plain
// open, read and close. A teardown that hundreds of guardians run at once
// is made mostly of such reads.

// readSmallFile returns the content of the file at path.
func readSmallFile(path string) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readDir returns the entries of the directory at path, "." and ".."
// left out. /proc and the cgroup file system both fill in d_type.
func readDir(path string) ([]dirEntry, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var out []dirEntry
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		out = parseDirents(buf[:n], out)
	}
}

// parseDirents appends the entries of a getdents64 buffer to out.
func parseDirents(b []byte, out []dirEntry) []dirEntry {
	const nameOff = int(unsafe.Offsetof(unix.Dirent{}.Name))
	for len(b) >= nameOff {
		d := (*unix.Dirent)(unsafe.Pointer(&b[0]))
		rec := int(d.Reclen)
		if rec < nameOff || rec > len(b) {
			break
		}
		name := b[nameOff:rec]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if s := string(name); s != "." && s != ".." {
			out = append(out, dirEntry{name: s, dir: d.Type == unix.DT_DIR})
		}
		b = b[rec:]
	}
	return out
}

// openRetry opens path close-on-exec, retrying on EINTR.
func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
