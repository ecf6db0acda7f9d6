//go:build unix && !linux

package unix

// Yield does nothing outside Linux, where the wake of many processes at
// once is not measured.
func Yield() {}

// IdleClass does nothing outside Linux: there is no class below the
// normal one that an unprivileged process may take for all its threads.
func IdleClass() error { return nil }
