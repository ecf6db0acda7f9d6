//go:build darwin

package demo

import "time"

// reapOrphans has nothing to do without a child subreaper.
func reapOrphans(time.Duration) {}
