//go:build darwin

package upgrade

// armBound does nothing on macOS (see Bound).
func armBound(bool) {}
