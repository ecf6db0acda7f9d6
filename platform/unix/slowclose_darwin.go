//go:build darwin

package unix

// HoldSlowToClose returns nothing outside Linux: a kqueue closes at once.
func HoldSlowToClose() (fds []uintptr, release func()) { return nil, func() {} }
