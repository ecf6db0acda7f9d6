//go:build !unix && !windows

package tray

import "syscall"

// detached: this system has no session to start the service in.
func detached() *syscall.SysProcAttr { return nil }
