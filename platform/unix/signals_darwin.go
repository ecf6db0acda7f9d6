//go:build darwin

package unix

// DefaultUnmanagedSignals does nothing on macOS, where the Go runtime
// handles every signal a program can catch, and a handled signal is at
// its default action after an exec.
func DefaultUnmanagedSignals() error { return nil }
