//go:build !linux

package service

// sweepCgroups has nothing to sweep outside Linux.
func sweepCgroups() []string { return nil }
