package unix

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"
)

// macOS has neither /proc nor cgroups: a process's CPU time and resident
// size come from libproc's proc_pidinfo(PROC_PIDTASKINFO), called through
// purego's dlsym, as tether is built without cgo (libSystem's own
// syscall(2) wrapper is variadic, which Go cannot call correctly on
// arm64).

// procTaskInfo is struct proc_taskinfo of <sys/proc_info.h>.
type procTaskInfo struct {
	VirtualSize      uint64
	ResidentSize     uint64
	TotalUser        uint64 // Mach absolute time units
	TotalSystem      uint64
	ThreadsUser      uint64
	ThreadsSystem    uint64
	Policy           int32
	Faults           int32
	Pageins          int32
	CowFaults        int32
	MessagesSent     int32
	MessagesReceived int32
	SyscallsMach     int32
	SyscallsUnix     int32
	Csw              int32
	Threadnum        int32
	Numrunning       int32
	Priority         int32
}

const procPidTaskInfo = 4 // PROC_PIDTASKINFO

var libproc struct {
	once    sync.Once
	pidinfo uintptr // proc_pidinfo
	tbfreq  uint64  // ticks per second of Mach absolute time
	err     error
}

// loadLibproc finds proc_pidinfo and the timebase. The timebase is read
// from hw.tbfrequency (1 GHz on Intel, 24 MHz on Apple silicon) rather
// than mach_timebase_info, which a process under Rosetta sees as 1/1
// while proc_pidinfo reports native ticks.
func loadLibproc() error {
	libproc.once.Do(func() {
		fn, err := purego.Dlsym(purego.RTLD_DEFAULT, "proc_pidinfo")
		if err != nil {
			libproc.err = fmt.Errorf("proc_pidinfo: %w", err)
			return
		}
		freq, err := unix.SysctlUint64("hw.tbfrequency")
		if err != nil || freq == 0 {
			libproc.err = fmt.Errorf("sysctl hw.tbfrequency: %v", err)
			return
		}
		libproc.pidinfo, libproc.tbfreq = fn, freq
	})
	return libproc.err
}

// cgroupUsage: macOS has no cgroups.
func cgroupUsage(string) (time.Duration, uint64, error) { return 0, 0, errors.ErrUnsupported }

// procUsage reads one process's CPU time (its threads', live and ended;
// not its children's) and resident size. A PID that names another
// process than p by now is ErrNoProcess.
func procUsage(p Proc) (time.Duration, uint64, error) {
	if err := loadLibproc(); err != nil {
		return 0, 0, err
	}
	var ti procTaskInfo
	size := unsafe.Sizeof(ti)
	n, _, _ := purego.SyscallN(libproc.pidinfo, uintptr(p.Pid), procPidTaskInfo, 0, uintptr(unsafe.Pointer(&ti)), size)
	if int32(n) != int32(size) {
		return 0, 0, ErrNoProcess
	}
	if now, err := Stat(p.Pid); err != nil || now.Start != p.Start {
		return 0, 0, ErrNoProcess
	}
	ticks := ti.TotalUser + ti.TotalSystem
	// ticks * 1e9 / tbfreq, without overflowing for centuries of CPU.
	secs, rest := ticks/libproc.tbfreq, ticks%libproc.tbfreq
	cpu := time.Duration(secs)*time.Second + time.Duration(rest*uint64(time.Second)/libproc.tbfreq)
	return cpu, ti.ResidentSize, nil
}
