package guardian

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Key derives the file-name-safe key of an identity: a readable prefix of
// at most 32 characters from [A-Za-z0-9._@-] (anything else becomes '_',
// and a leading '.' too) and 16 hex digits of its SHA-256. No identity can
// produce a path separator, "..", or a name that collides with another
// identity's.
func Key(identity string) string {
	var b strings.Builder
	for i := 0; i < len(identity) && b.Len() < 32; i++ {
		c := identity[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '-', c == '@':
			b.WriteByte(c)
		case c == '.' && b.Len() > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(identity))
	return b.String() + "-" + hex.EncodeToString(sum[:8])
}
