//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"
)

// SpawnSpec describes a process to start inside a job.
type SpawnSpec struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Stdin, Stdout and Stderr are the only handles the process
	// inherits.
	Stdin, Stdout, Stderr *os.File
}

// StartInJob starts the process in job before it runs a single
// instruction: it is created suspended (CREATE_SUSPENDED), assigned to
// the job, and only then is its thread resumed, so no process it starts
// can escape the job in between. It is the leader of a new process group
// (CREATE_NEW_PROCESS_GROUP), which a CTRL_BREAK_EVENT can address
// alone. It inherits its three standard handles and nothing else: the
// handle list (PROC_THREAD_ATTRIBUTE_HANDLE_LIST) names them, so no
// inheritable handle elsewhere in this process leaks into it. A process
// that cannot be put in the job is terminated before it runs.
func StartInJob(s SpawnSpec, job *Job) (p *Process, err error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("no argv")
	}
	self := windows.CurrentProcess()
	// The standard handles must be inheritable to be listed; inheritable
	// duplicates are made for this one start and closed right after.
	std := make([]windows.Handle, 3)
	for i, f := range []*os.File{s.Stdin, s.Stdout, s.Stderr} {
		if f == nil {
			return nil, fmt.Errorf("standard handle %d is not set", i)
		}
		if err := windows.DuplicateHandle(self, windows.Handle(f.Fd()), self, &std[i], 0, true, windows.DUPLICATE_SAME_ACCESS); err != nil {
			closeHandles(std)
			return nil, fmt.Errorf("duplicating standard handle %d: %w", i, err)
		}
	}
	defer closeHandles(std)
	attrs, err := windows.NewProcThreadAttributeList(1)
	if err != nil {
		return nil, fmt.Errorf("NewProcThreadAttributeList: %w", err)
	}
	defer attrs.Delete()
	if err := attrs.Update(windows.PROC_THREAD_ATTRIBUTE_HANDLE_LIST, unsafe.Pointer(&std[0]), uintptr(len(std))*unsafe.Sizeof(std[0])); err != nil {
		return nil, fmt.Errorf("UpdateProcThreadAttribute: %w", err)
	}
	si := &windows.StartupInfoEx{ProcThreadAttributeList: attrs.List()}
	si.Cb = uint32(unsafe.Sizeof(*si))
	si.Flags = windows.STARTF_USESTDHANDLES
	si.StdInput, si.StdOutput, si.StdErr = std[0], std[1], std[2]

	path, err := windows.UTF16PtrFromString(s.Path)
	if err != nil {
		return nil, &os.PathError{Op: "CreateProcess", Path: s.Path, Err: err}
	}
	cmdline, err := windows.UTF16PtrFromString(windows.ComposeCommandLine(s.Argv))
	if err != nil {
		return nil, &os.PathError{Op: "CreateProcess", Path: s.Path, Err: err}
	}
	var dir *uint16
	if s.Dir != "" {
		if dir, err = windows.UTF16PtrFromString(s.Dir); err != nil {
			return nil, &os.PathError{Op: "CreateProcess", Path: s.Path, Err: err}
		}
	}
	env, err := envBlock(s.Env)
	if err != nil {
		return nil, err
	}
	flags := uint32(windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP |
		windows.CREATE_UNICODE_ENVIRONMENT | windows.EXTENDED_STARTUPINFO_PRESENT)
	var pi windows.ProcessInformation
	if err := windows.CreateProcess(path, cmdline, nil, nil, true, flags, &env[0], dir, &si.StartupInfo, &pi); err != nil {
		return nil, &os.PathError{Op: "CreateProcess", Path: s.Path, Err: err}
	}
	defer windows.CloseHandle(pi.Thread)
	p = newProcess(int(pi.ProcessId), pi.Process)
	defer func() {
		if err != nil {
			// Still suspended: it never ran.
			_ = windows.TerminateProcess(p.h, 1)
			p.Close()
			p = nil
		}
	}()
	if err := job.Assign(p); err != nil {
		return nil, err
	}
	if _, err := windows.ResumeThread(pi.Thread); err != nil {
		return nil, fmt.Errorf("ResumeThread of pid %d: %w", pi.ProcessId, err)
	}
	return p, nil
}

func closeHandles(hs []windows.Handle) {
	for _, h := range hs {
		if h != 0 {
			windows.CloseHandle(h)
		}
	}
}

// envBlock makes the UTF-16 environment block CreateProcess takes:
// KEY=VALUE strings, each NUL-terminated, then one more NUL.
func envBlock(env []string) ([]uint16, error) {
	if len(env) == 0 {
		return []uint16{0, 0}, nil
	}
	var n int
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("environment entry %q contains a NUL byte", kv)
		}
		n += len(kv) + 1
	}
	b := make([]uint16, 0, n+1)
	for _, kv := range env {
		b = append(b, utf16.Encode([]rune(kv))...)
		b = append(b, 0)
	}
	return append(b, 0), nil
}

// CtrlBreak sends CTRL_BREAK_EVENT to the process group whose leader is
// pid, the console's way of asking a process to stop. It reaches only
// processes attached to the caller's console; it fails when there is no
// console (a process without one, or one whose console has no input),
// and the caller then has no graceful request to make.
func CtrlBreak(pid int) error {
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pid)); err != nil {
		return fmt.Errorf("GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, %d): %w", pid, err)
	}
	return nil
}
