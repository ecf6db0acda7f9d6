//go:build windows

package windows

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// OpenForHandover opens process pid to give it handles (DuplicateInto).
func OpenForHandover(pid int) (windows.Handle, error) {
	h, err := windows.OpenProcess(windows.PROCESS_DUP_HANDLE|windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, fmt.Errorf("opening pid %d: %w", pid, err)
	}
	return h, nil
}

// DuplicateInto duplicates this process's handle h into the process to
// (see OpenForHandover), with the same access, not inheritable there, and
// returns its value there.
func DuplicateInto(to windows.Handle, h uintptr) (uintptr, error) {
	var dup windows.Handle
	if err := windows.DuplicateHandle(windows.CurrentProcess(), windows.Handle(h), to, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return 0, fmt.Errorf("duplicating handle %#x: %w", h, err)
	}
	return uintptr(dup), nil
}
