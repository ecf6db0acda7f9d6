package tray

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// detached gives a started service no console and a process group of its
// own, so the tray's console (if any) and its Ctrl+C do not reach it.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS,
		HideWindow:    true,
	}
}
