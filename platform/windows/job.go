//go:build windows

package windows

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Job is a job object whose processes all die when its last handle is
// closed (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): when the process holding
// it dies, however it dies, so does every process in it. A process
// started in a job stays in it with everything it starts, unless the job
// allows breakaway, which this one does not.
type Job struct {
	name string
	h    windows.Handle
}

// ErrJobExists reports that a job object of that name already exists.
var ErrJobExists = errors.New("a job object of that name already exists")

// Job access rights (winnt.h), which x/sys does not name.
const (
	jobObjectAssignProcess = 0x0001
	jobObjectQuery         = 0x0004
	jobObjectTerminate     = 0x0008
)

var (
	procOpenJobObjectW   = windows.NewLazySystemDLL("kernel32.dll").NewProc("OpenJobObjectW")
	procCreateJobObjectW = windows.NewLazySystemDLL("kernel32.dll").NewProc("CreateJobObjectW")
)

// NewJob creates a kill-on-close job object, named name unless name is
// empty, that only the current user may open. A name lets a later holder
// of the same identity find the job of a guardian that died, and confirm
// its processes gone before it starts another tree. A name that exists
// already is refused with ErrJobExists rather than joined.
func NewJob(name string) (*Job, error) {
	sa, err := userOnlyAttributes("GA")
	if err != nil {
		return nil, err
	}
	var np *uint16
	if name != "" {
		if np, err = windows.UTF16PtrFromString(name); err != nil {
			return nil, &JobError{Name: name, Op: "CreateJobObject", Err: err}
		}
	}
	// x/sys's CreateJobObject reports no error with a valid handle, so
	// an existing job would be joined unnoticed: call it directly to
	// read ERROR_ALREADY_EXISTS (the call clears the last error first).
	r, _, err := procCreateJobObjectW.Call(uintptr(unsafe.Pointer(sa)), uintptr(unsafe.Pointer(np)))
	h := windows.Handle(r)
	if h == 0 {
		return nil, &JobError{Name: name, Op: "CreateJobObject", Err: err}
	}
	if errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		windows.CloseHandle(h)
		return nil, &JobError{Name: name, Op: "CreateJobObject", Err: ErrJobExists}
	}
	j := &Job{name: name, h: h}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, &JobError{Name: name, Op: "SetInformationJobObject", Err: err}
	}
	return j, nil
}

// OpenJob opens the named job to query and terminate it. It fails with
// an error matching os.ErrNotExist (ERROR_FILE_NOT_FOUND) when no such job
// exists: a job object lives as long as a handle to it or a process in it.
func OpenJob(name string) (*Job, error) { return openJob(name, jobObjectQuery|jobObjectTerminate) }

// openJob opens the named job with the access rights asked for.
func openJob(name string, access uint32) (*Job, error) {
	np, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &JobError{Name: name, Op: "OpenJobObject", Err: err}
	}
	r, _, e := procOpenJobObjectW.Call(uintptr(access), 0, uintptr(unsafe.Pointer(np)))
	if r == 0 {
		return nil, &JobError{Name: name, Op: "OpenJobObject", Err: e}
	}
	return &Job{name: name, h: windows.Handle(r)}, nil
}

// Name returns the job's name, empty for an anonymous job.
func (j *Job) Name() string { return j.name }

// Assign puts the process in the job.
func (j *Job) Assign(p *Process) error {
	if err := windows.AssignProcessToJobObject(j.h, p.h); err != nil {
		return &JobError{Name: j.name, Op: "AssignProcessToJobObject", Err: err}
	}
	return nil
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// Active returns how many processes in the job are still running.
func (j *Job) Active() (int, error) {
	var info basicAccounting
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	if err != nil {
		return 0, &JobError{Name: j.name, Op: "QueryInformationJobObject", Err: err}
	}
	return int(info.ActiveProcesses), nil
}

// Pids returns the PIDs of the processes in the job (at most 256 of them:
// enough to say what is left).
func (j *Job) Pids() ([]int, error) {
	const max = 256
	// JOBOBJECT_BASIC_PROCESS_ID_LIST: two DWORD counts, then the ids
	// as ULONG_PTRs.
	var buf struct {
		Assigned uint32
		Listed   uint32
		Ids      [max]uintptr
	}
	err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&buf)), uint32(unsafe.Sizeof(buf)), nil)
	if err != nil && !errors.Is(err, windows.ERROR_MORE_DATA) {
		return nil, &JobError{Name: j.name, Op: "QueryInformationJobObject", Err: err}
	}
	out := make([]int, 0, buf.Listed)
	for _, id := range buf.Ids[:min(buf.Listed, max)] {
		out = append(out, int(id))
	}
	return out, nil
}

// JobAliveError reports processes left in a job after it was terminated
// and the grace period passed: the job could not be confirmed empty.
type JobAliveError struct {
	Name   string
	Active int
	Pids   []int
}

func (e *JobAliveError) Error() string {
	var b strings.Builder
	for i, pid := range e.Pids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, pid)
	}
	return fmt.Sprintf("%d process(es) still alive in job %q after TerminateJobObject: %s", e.Active, e.Name, b.String())
}

// StopReport says how a job went down.
type StopReport struct {
	Requested int   // processes running when the graceful request went out
	Killed    int   // processes still running at the deadline, terminated
	Forced    bool  // TerminateJobObject was needed
	Graceful  error // why the graceful request could not be sent, if it could not
}

// Stop takes the job's processes down: graceful, when not nil, asks them
// to exit (its error is recorded, not fatal: there is then nothing to
// wait for); the job gets up to timeout to empty; then TerminateJobObject
// ends what is left, and up to grace to be confirmed empty, polling the
// job's count of active processes. It returns a *JobAliveError when
// processes remain.
func (j *Job) Stop(graceful func() error, timeout, grace time.Duration) (StopReport, error) {
	var rep StopReport
	n, err := j.Active()
	if err != nil || n == 0 {
		return rep, err
	}
	if graceful != nil && timeout > 0 {
		if rep.Graceful = graceful(); rep.Graceful == nil {
			rep.Requested = n
			if n, err = j.waitEmpty(time.Now().Add(timeout)); err != nil || n == 0 {
				return rep, err
			}
		}
	}
	rep.Forced = true
	rep.Killed = n
	if err := windows.TerminateJobObject(j.h, 1); err != nil {
		return rep, &JobError{Name: j.name, Op: "TerminateJobObject", Err: err}
	}
	if n, err = j.waitEmpty(time.Now().Add(grace)); err != nil || n == 0 {
		return rep, err
	}
	pids, _ := j.Pids()
	return rep, &JobAliveError{Name: j.name, Active: n, Pids: pids}
}

// waitEmpty polls the job until it has no active process or the deadline
// passes, and returns the last count. The job object has no event for
// "empty" short of a completion port, so it polls, from every millisecond
// up to every 10 ms.
func (j *Job) waitEmpty(deadline time.Time) (int, error) {
	pause := time.Millisecond
	for {
		n, err := j.Active()
		if err != nil || n == 0 {
			return n, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return n, nil
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// Close closes the handle. When it is the last one, Windows ends every
// process still in the job.
func (j *Job) Close() error {
	if j.h == 0 {
		return nil
	}
	err := windows.CloseHandle(j.h)
	j.h = 0
	return err
}

// JobError is a failed job object operation.
type JobError struct {
	Name string
	Op   string
	Err  error
}

func (e *JobError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Name, e.Err)
}

func (e *JobError) Unwrap() error { return e.Err }
