package api

import (
	"fmt"
	"regexp"
)

// profileRE is what a profile name may be: it becomes part of a file or
// pipe name, so it never holds a separator or starts with a dot.
var profileRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func checkProfile(profile string) error {
	if !profileRE.MatchString(profile) {
		return fmt.Errorf("profile %q: must match %s", profile, profileRE)
	}
	return nil
}
