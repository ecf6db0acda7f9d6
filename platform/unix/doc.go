// Package unix holds the Unix halves of tether's lifetime guarantees: the
// ownership lock (flock on a file opened without following links), user-only
// directories and append-only files that are never opened through a link,
// starting a process in its own session (optionally straight into a cgroup
// v2 on Linux), process references and handles that never signal a reused
// PID (pidfds on Linux), enumerating and tearing down a process tree, the
// child subreaper and its reaper, the tether's socket pair, the local API's
// unix socket and the peer credentials of its callers, the watch of writes
// to a directory's files (inotify, kqueue), and the release of an idle
// process's start-up pages.
//
// Package platform is its portable face: what both systems do (lock files,
// private directories and files, the local socket and its peer, process
// references, the write watch) is called through it; the rest is Unix
// mechanism, called by the guardian's Unix files, the demo and tests. It knows nothing of
// identities, owners or protocols: its callers give it paths, pids and
// deadlines.
package unix
