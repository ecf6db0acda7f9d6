package unix

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// userHZ is the unit of the times in /proc/PID/stat: USER_HZ, 100 on
// every architecture Go runs Linux on, whatever the kernel's own HZ.
const userHZ = 100

// cgroupUsage reads a cgroup v2's CPU time (cpu.stat's usage_usec, which
// every cgroup v2 has) and memory (memory.current, there only where the
// memory controller is enabled for it). A missing file is an error: the
// caller then sums over the processes.
func cgroupUsage(dir string) (cpu time.Duration, mem uint64, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return 0, 0, err
	}
	if mem, err = strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%s/memory.current: %w", dir, err)
	}
	usec, err := keyedValue(filepath.Join(dir, "cpu.stat"), "usage_usec")
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(usec) * time.Microsecond, mem, nil
}

// keyedValue reads the value of key from a file of "key value" lines
// (cpu.stat), or from "Key: value kB" lines (smaps_rollup, with key
// "Pss:").
func keyedValue(path, key string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := bytes.Fields(s.Bytes())
		if len(fs) >= 2 && string(fs[0]) == key {
			n, err := strconv.ParseUint(string(fs[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}

// procUsage reads one process's CPU time (utime, stime, cutime and
// cstime of /proc/PID/stat: its own and that of the children it waited
// for) and memory (Pss of /proc/PID/smaps_rollup, Linux 4.14 on; else the
// resident pages of /proc/PID/statm). A PID that names another process
// than p by now is ErrNoProcess.
func procUsage(p Proc) (time.Duration, uint64, error) {
	dir := "/proc/" + strconv.Itoa(p.Pid) + "/"
	b, err := os.ReadFile(dir + "stat")
	if err != nil {
		return 0, 0, ErrNoProcess
	}
	now, err := parseStat(p.Pid, b)
	if err != nil {
		return 0, 0, err
	}
	if now.Start != p.Start {
		return 0, 0, ErrNoProcess
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	// f[0] is field 3; utime, stime, cutime and cstime are fields 14
	// to 17 (parseStat has checked there are 22).
	var ticks uint64
	for _, k := range []int{11, 12, 13, 14} {
		n, err := strconv.ParseInt(string(f[k]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%sstat: malformed times", dir)
		}
		ticks += uint64(max(n, 0))
	}
	cpu := time.Duration(ticks) * time.Second / userHZ
	if kb, err := keyedValue(dir+"smaps_rollup", "Pss:"); err == nil {
		return cpu, kb << 10, nil
	}
	b, err = os.ReadFile(dir + "statm")
	if err != nil {
		return 0, 0, ErrNoProcess
	}
	fs := bytes.Fields(b)
	if len(fs) < 2 {
		return 0, 0, fmt.Errorf("%sstatm: malformed", dir)
	}
	pages, err := strconv.ParseUint(string(fs[1]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%sstatm: malformed", dir)
	}
	return cpu, pages * uint64(os.Getpagesize()), nil
}
