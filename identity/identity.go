// Package identity owns what an identity may be: the string an agent's
// ownership lock is keyed on, which no two live agent trees share. The
// config checks an identity when it reads one, the guardian again when it
// is asked to hold one; both use Validate.
//
// It is a leaf, so that any package may use it: the config without
// importing the guardian, the guardian without importing the service.
package identity

import (
	"fmt"
	"unicode/utf8"
)

// MaxLen bounds an identity, in bytes.
const MaxLen = 256

// Validate checks an identity: 1 to MaxLen bytes of UTF-8 without control
// characters. Anything else, including "../x", is allowed: the lock file
// name is derived from a hash, never from the raw string.
func Validate(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("identity is empty")
	case len(id) > MaxLen:
		return fmt.Errorf("identity is %d bytes long; the limit is %d", len(id), MaxLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("identity %q is not valid UTF-8", id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("identity %q contains control character %U", id, r)
		}
	}
	return nil
}
