//go:build darwin

package unix

// Yield does nothing outside Linux, where the wake of many processes at
// once is not measured.
func Yield() {}
