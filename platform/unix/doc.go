// Package unix holds the Unix halves of tether's lifetime guarantees: the
// ownership lock (flock on a file opened without following links), starting a
// process in its own session, enumerating and signalling a process tree
// without ever signalling a reused PID, the child-subreaper reaper, cgroup v2
// containment on Linux, and peer credentials of local sockets.
//
// Package platform is its portable face: what both systems do (lock files,
// private directories and files, the local socket and its peer, process
// references) is called through it; the rest is Unix mechanism, called by
// the guardian's Unix files, the demo and tests. It knows nothing of
// identities, owners or protocols, and imports nothing of tether's: its
// callers give it paths, pids and deadlines.
package unix
