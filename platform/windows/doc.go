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
// It knows nothing of identities, owners or protocols: its callers (the
// guardian, the service and its local API, package api's dial, and the
// tests) give it names, paths, handles and deadlines. It imports nothing of
// ours.
package windows
