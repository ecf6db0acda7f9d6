package platform

import (
	"os/exec"
	"sync"
)

// Ref names a process across PID reuse: its PID together with its start
// time (on Unix in the system's own units, on Windows the creation
// FILETIME). In JSON it is {"pid":N,"start":N}.
type Ref = ref

// RefOf returns the reference of the live process pid, or an error when
// there is none (a zombie is none on Unix).
func RefOf(pid int) (Ref, error) { return refOf(pid) }

// Self returns the reference of this process; when its start time cannot
// be read, the reference has the PID alone.
func Self() Ref { return selfRef() }

// selfRef is read once: a process's pid and start time never change,
// not even across an execve.
var selfRef = sync.OnceValue(self)

// Alive reports whether the process r names still runs (a zombie counts
// as dead). A process that has r's PID but another start time is another
// process.
func Alive(r Ref) bool { return alive(r) }

// StartChild starts cmd and counts it as this process's own child until
// WaitChild, which must be called once it has started: a process that
// adopts orphans (the service on Linux, a child subreaper) reaps every
// child it did not start this way, and would take cmd's exit status from
// its Wait.
func StartChild(cmd *exec.Cmd) error { return startChild(cmd) }

// WaitChild waits for a child StartChild started, and ends its count.
func WaitChild(cmd *exec.Cmd) error { return waitChild(cmd) }
