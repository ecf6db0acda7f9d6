//go:build !linux

package guardian

// yieldCPU does nothing here: the wake of many guardians at once is
// measured, and tuned, on Linux (see yield_linux.go).
func yieldCPU() {}
