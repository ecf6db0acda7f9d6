package history

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Now is the time on the machine's monotonic clock (CLOCK_MONOTONIC), in
// nanoseconds: the same clock for every process of the machine, which a
// step of the wall clock does not move.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC is always there on Linux.
		panic(err)
	}
	return ts.Nano()
}

// Boot is when the process pid started, in clock ticks since boot, as
// /proc/<pid>/stat says: with the pid, it names one process.
func Boot(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// counted come after its last ')'. starttime is field 22, the 20th
	// after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	fields := strings.Fields(s[i+1:])
	if i < 0 || len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %q has no start time", pid, s)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
