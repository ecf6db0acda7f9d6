//go:build !linux

package power

import "context"

// WatchSleep: only Linux's logind announces suspends here; elsewhere it
// sends nothing, and nothing waits for a resume.
func WatchSleep(context.Context, chan<- bool) {}
