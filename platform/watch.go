package platform

// WriteWatch tells of writes to the files directly inside one directory,
// once for each Arm: the first write after an Arm sends one value on C,
// and nothing more comes until the next Arm. While nothing is written it
// costs no wakeup: no timer runs and no thread polls.
type WriteWatch interface {
	// C delivers one value for each Arm that a change answered; a value
	// not yet taken is never lost, and a second one never queues behind
	// it.
	C() <-chan struct{}
	// Arm asks for a value on C at the next write to a file of the
	// directory, or at the next change of the directory itself: an
	// entry created, removed or renamed, or the directory removed or
	// renamed (after which Arm fails until it exists again). Arming an
	// armed watch changes nothing. A watch whose OS instance broke sends
	// a last value and fails every Arm after.
	Arm() error
	// Close ends the watch; C is never sent to again.
	Close() error
}

// WatchWrites returns a watch of the files directly inside dir, not yet
// armed: inotify on Linux, kqueue on macOS. Where the OS has no notice of
// a write to a file that stays open it fails with errors.ErrUnsupported,
// and callers look at the files at a pace of their own: on Windows,
// whose directory entries follow the size of a file open for writing
// only lazily (ReadDirectoryChangesW reports a change of the entry, not
// of the file), and on the other Unix systems.
func WatchWrites(dir string) (WriteWatch, error) { return watchWrites(dir) }
