package platform

// Ref names a process across PID reuse: its PID together with its start
// time (on Unix in the system's own units, on Windows the creation
// FILETIME). In JSON it is {"pid":N,"start":N}.
type Ref = ref

// Self returns the reference of this process; when its start time cannot
// be read, the reference has the PID alone.
func Self() Ref { return self() }

// Alive reports whether the process r names still runs (a zombie counts
// as dead). A process that has r's PID but another start time is another
// process.
func Alive(r Ref) bool { return alive(r) }
