//go:build darwin

package unix

// ReleaseExecutablePages does nothing outside Linux.
func ReleaseExecutablePages() error { return nil }
