// Package guardian is the smallest separate owner of one agent's lifetime,
// and the owner-side handle on it.
//
// The guardian is the tether binary re-executed as "tether guardian". It
// takes the identity's ownership lock, creates the agent's private
// directory, starts the agent in a session (and, where it can, a cgroup) of
// its own, and watches its owner through the tether: one end of a socket
// pair inherited as descriptor 3. When the tether reaches EOF, when asked to
// stop, on SIGTERM, SIGINT or SIGHUP, or when the agent exits, it tears the
// whole tree down, removes the private directory and only then releases the
// lock.
//
// On Windows the lock is a named mutex held by a pinned thread, the
// containment a kill-on-close job object the agent enters before it runs,
// and the tether one end of a duplex named pipe whose handle value is on
// the guardian's command line; the owner's process handle is a second
// sign of its death (guardian_windows.go). What the platforms share, the
// request handling, the watch, the staged teardown, the owner record and
// the whole owner side, is written once (guardian.go, record.go, owner.go,
// pool.go).
//
// The owner side is Start, which returns a Session. The two speak the
// protocol in protocol.go: typed JSON lines, the first each way carrying a
// version.
//
// This package knows nothing of the service, its config or its state; it
// takes paths and argv from its caller and leaves policy (restarts,
// backoff) to it. Of tether's packages it imports only the platform
// halves and two leaves that import nothing of tether's: identity (what an
// identity may be) and internal/logline (the format of its log lines).
package guardian
