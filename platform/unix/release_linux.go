package unix

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseExecutablePages drops this process's mappings of its own
// executable's read-only segments (code and read-only data) from its
// resident set. A long-lived, mostly idle process (a guardian) has faulted
// in pages of every package's initialisation, and the kernel maps 64 KiB
// around each fault; none of that is needed again. The pages stay in the
// page cache and come back on the next touch: this changes what the
// process holds, not what it can run. Writable segments are never touched.
func ReleaseExecutablePages() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_ = madvise(uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
	return s.Err()
}

func madvise(addr, length uintptr, advice int) error {
	_, _, e := unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice))
	if e != 0 {
		return e
	}
	return nil
}
