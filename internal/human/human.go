// Package human writes numbers the way a person reads them: durations
// without their zero units ("1m", not "1m0s") and counts with the noun
// in the right number ("1 agent", "2 agents").
package human

import (
	"strconv"
	"strings"
	"time"
)

// Duration is d as time.Duration writes it, without the zero units that
// follow a larger one: "1m" for a minute, "1h30m" for an hour and a
// half, "1m0.5s" stays as it is; under a second it is unchanged
// ("300ms").
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Count is n with the noun for one or for many: Count(1, "agent",
// "agents") is "1 agent", Count(0, ...) "0 agents".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
