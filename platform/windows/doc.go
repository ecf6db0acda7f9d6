// Package windows holds the Windows halves of tether's lifetime
// guarantees: the ownership lock (a named mutex held by a pinned OS
// thread), lock files (LockFileEx), containment (a kill-on-close job object
// the agent enters before it runs a single instruction), starting a process
// with an explicit list of inherited handles, CTRL_BREAK to its process
// group, user-only directories and files and their removal, the duplex
// pipe that ties a guardian to its owner, the local API's named pipe (its
// listener, its dial and the identity of its clients), and process
// references that survive PID reuse.
//
// Package platform is its portable face: what both systems do (lock files,
// private directories and files, the local pipe and its peer, process
// references) is called through it; the rest is Windows mechanism, called
// by the guardian's Windows files and by tests. It knows nothing of
// identities, owners or protocols: its callers give it names, paths,
// handles and deadlines.
package windows
