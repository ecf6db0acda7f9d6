package unix

import "golang.org/x/sys/unix"

// BecomeSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): orphaned descendants, including ones that
// double-forked and called setsid, are reparented to it instead of to init,
// so they stay visible and reapable. It reports whether that is in effect.
func BecomeSubreaper() (bool, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return false, err
	}
	return true, nil
}
