//go:build linux || darwin

package unix

import (
	"os"
	"syscall"
	"time"
)

// ChangeTime is when the file of fi last changed, its contents or its
// metadata (its ctime): a rewrite moves it, whatever it sets the
// modification time to. It is the zero time when fi has no stat.
func ChangeTime(fi os.FileInfo) time.Time {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return ctime(st)
}
