//go:build unix

package unix

// DupOnto makes descriptor to refer to the same file as from, closing what
// to referred to before. The new descriptor is inherited across exec.
func DupOnto(from, to int) error {
	return dupOnto(from, to)
}
