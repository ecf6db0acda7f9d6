//go:build windows

package windows

import (
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// JobUsage is what the processes of a job cost at one moment.
type JobUsage struct {
	// CPU is the user and kernel time of every process that has run in
	// the job (its basic accounting), ended ones included.
	CPU time.Duration
	// Memory is the sum of the working sets of the job's live processes
	// (of the first 256: see Pids), in bytes.
	Memory uint64
	// Active is how many of its processes run.
	Active int
}

// processMemoryCounters is PROCESS_MEMORY_COUNTERS of <psapi.h>.
type processMemoryCounters struct {
	Cb                         uint32
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
}

var procK32GetProcessMemoryInfo = windows.NewLazySystemDLL("kernel32.dll").NewProc("K32GetProcessMemoryInfo")

// UsageOfJob measures the job named name, opened for querying only.
// A job that no longer exists fails with an error matching
// os.ErrNotExist.
func UsageOfJob(name string) (JobUsage, error) {
	j, err := openJob(name, jobObjectQuery)
	if err != nil {
		return JobUsage{}, err
	}
	defer j.Close()
	var info basicAccounting
	err = windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	if err != nil {
		return JobUsage{}, &JobError{Name: name, Op: "QueryInformationJobObject", Err: err}
	}
	u := JobUsage{
		// 100 ns units.
		CPU:    time.Duration(info.TotalUserTime+info.TotalKernelTime) * 100,
		Active: int(info.ActiveProcesses),
	}
	pids, err := j.Pids()
	if err != nil {
		return JobUsage{}, err
	}
	for _, pid := range pids {
		u.Memory += workingSet(pid)
	}
	return u, nil
}

// workingSet is the working set of process pid, 0 when it cannot be read
// (it exited meanwhile).
func workingSet(pid int) uint64 {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ, false, uint32(pid))
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(h)
	var c processMemoryCounters
	c.Cb = uint32(unsafe.Sizeof(c))
	if r, _, _ := procK32GetProcessMemoryInfo.Call(uintptr(h), uintptr(unsafe.Pointer(&c)), uintptr(c.Cb)); r == 0 {
		return 0
	}
	return uint64(c.WorkingSetSize)
}
