// Package windows holds the Windows halves of tether's lifetime
// guarantees: the ownership lock (a named mutex held by a pinned OS
// thread), containment (a kill-on-close job object the agent enters
// before it runs a single instruction), starting a process with an
// explicit list of inherited handles, user-only directories and files,
// the duplex pipe that ties a guardian to its owner, and process
// references that survive PID reuse.
//
// It knows nothing of identities, owners or protocols: callers in
// guardian/ and service/ give it names, paths, handles and deadlines.
package windows
