// Package unix holds the Unix halves of tether's lifetime guarantees: the
// ownership lock (flock on a file opened without following links), starting a
// process in its own session, enumerating and signalling a process tree
// without ever signalling a reused PID, the child-subreaper reaper, cgroup v2
// containment on Linux, and peer credentials of local sockets.
//
// It knows nothing of identities, owners or protocols: callers in guardian/
// and service/ give it paths, pids and deadlines.
package unix
