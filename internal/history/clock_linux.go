package history

import "golang.org/x/sys/unix"

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
