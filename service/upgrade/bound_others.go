//go:build !linux

package upgrade

// armBound does nothing outside Linux: on Windows the service before
// waits for its successor with its own bounds, and other systems have no
// interval timer in reach that an exec keeps.
func armBound(bool) {}

// Bound does nothing outside Linux (see armBound).
func Bound(func(string, ...any)) (served func()) { return func() {} }
