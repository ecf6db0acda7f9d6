package unix

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// selfFdDir is where a process finds its own descriptors by number.
const selfFdDir = "/proc/self/fd/"

// selfFdPath is the path by which this process opens its descriptor fd.
func selfFdPath(fd int) string { return selfFdDir + strconv.Itoa(fd) }

// newMemfd makes an empty close-on-exec memfd named name.
func newMemfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// NewMemFile returns a close-on-exec memfd named name that holds data,
// and the path by which a process that has the descriptor (as its
// successor after an execve does) reads it: the file lives in memory and
// goes with its last descriptor, with no directory to leave it in.
func NewMemFile(name string, data []byte) (*os.File, string, error) {
	f, err := newMemfd(name)
	if err != nil {
		return nil, "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, selfFdPath(int(f.Fd())), nil
}

// MemFileDescriptor says whether path names a descriptor of this process
// as NewMemFile does, and which.
func MemFileDescriptor(path string) (int, bool) {
	n, ok := strings.CutPrefix(path, selfFdDir)
	if !ok {
		return 0, false
	}
	fd, err := strconv.Atoi(n)
	return fd, err == nil && fd > 2
}
