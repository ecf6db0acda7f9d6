//go:build unix

package tray

import "syscall"

// detached puts a started service in a session of its own: no terminal,
// no signal sent to the tray's process group reaches it.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
