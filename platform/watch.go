package platform

// DirWatch reports removals in one directory. See WatchRemovals.
type DirWatch interface {
	// C receives after each burst of removals, and is closed when the
	// watch ends: after Close, or once the directory itself is gone.
	C() <-chan struct{}
	Close() error
}

// WatchRemovals watches dir for an entry deleted or renamed away, and
// for dir itself being deleted or renamed: inotify on Linux, where
// nothing wakes while nothing is removed. Elsewhere it fails with an
// error matching errors.ErrUnsupported, and the caller has its reload
// signal (SIGHUP) instead; a Windows pipe has no file to remove.
func WatchRemovals(dir string) (DirWatch, error) { return watchRemovals(dir) }
