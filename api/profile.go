package api

import "fmt"

// ProfilePattern is what a profile name may be: it becomes part of a file
// or pipe name, so it never holds a separator or starts with a dot.
const ProfilePattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`

// ValidateProfile checks a profile name against ProfilePattern. It is a
// loop, not a regexp: every exec of the binary (each guardian, each
// command) would otherwise compile one at start.
func ValidateProfile(p string) error {
	ok := len(p) >= 1 && len(p) <= 64
	for i := 0; ok && i < len(p); i++ {
		c := p[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("profile %q: must match %s", p, ProfilePattern)
	}
	return nil
}

func checkProfile(profile string) error { return ValidateProfile(profile) }
