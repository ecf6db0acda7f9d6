//go:build unix

package demo

import "syscall"

// workerAttr puts the worker in a process group of its own.
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// escapeeAttr puts the escapee in a session of its own.
func escapeeAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
