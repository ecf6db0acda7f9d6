package unix

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Yield lets the other runnable processes run before this one goes on
// (sched_yield(2)).
func Yield() { _, _, _ = unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// IdleClass moves every thread of the process to SCHED_IDLE: from then on
// it runs only when no other process has work for the CPU, and threads it
// starts later inherit the class. A process that has done what others
// wait for, and has only its own end left, gives its CPU time away so.
// A thread started during the call, by one not yet moved, is found by the
// next pass over the process's threads; the call ends with a pass that
// finds none. It returns the first error; the other threads are moved
// regardless.
func IdleClass() error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	moved := map[int]bool{}
	var first error
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		more := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || moved[tid] {
				continue
			}
			moved[tid], more = true, true
			// A thread that ended meanwhile is no error.
			if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
				first = &os.SyscallError{Syscall: "sched_setattr", Err: err}
			}
		}
		if !more {
			return first
		}
	}
}
