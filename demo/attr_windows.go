package demo

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// workerAttr puts the worker in a process group of its own.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// escapeeAttr detaches the escapee from the agent's console and process
// group; the agent's job still holds it, which is the point.
func escapeeAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}
