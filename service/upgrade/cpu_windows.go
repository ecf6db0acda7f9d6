package upgrade

import (
	"time"

	"golang.org/x/sys/windows"
)

// ProcessCPU is the CPU time this process has used (user and system, all
// its threads). The successor is another process: its steps' CPU starts
// again from its own start.
func ProcessCPU() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration(ticks(kernel)+ticks(user)) * 100 // 100 ns ticks
}
