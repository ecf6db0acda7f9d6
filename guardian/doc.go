// Package guardian is the smallest separate owner of one agent's lifetime,
// and the owner-side handle on it.
//
// The guardian is its own small executable, tether-guardian (its main is
// cmd/tether-guardian), shipped beside tether; where it is missing, the
// tether binary re-executed as "tether guardian" serves instead. It
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
// sign of its death. What the platforms share is written once: the start
// sequence (start.go), the request handling, the watch and the staged
// teardown (guardian.go), the owner record (record.go), the command
// lookup (lookpath.go) and the owner side (owner.go, pool.go). What
// differs is the osSteps interface (guardian.go), implemented in
// guardian_unix.go and guardian_windows.go, and the guardian's command
// and tether (owner_unix.go, owner_windows.go). Portable operations (lock
// files, private directories, process references) come from package
// platform; the per-OS files alone reach into its halves.
//
// The owner side is Start, which returns a Session; Pool keeps guardians
// started ahead of need, and Reclaim frees an identity whose guardian died.
// A tether changes owner (attach.go): Session.Detach hands it over at an
// upgrade and Attach takes it on the other side; Adopt takes over a
// guardian whose owner died while its agent had survive_crash (the
// guardian's wait is orphan.go, its adopt socket adopt.go). The two sides
// speak the guardian protocol: typed JSON lines, the first each way
// carrying a version, which the other side refuses unless it is its own.
// Its vocabulary is package wire; its envelope and the start request are
// protocol.go.
//
// This package knows nothing of the service, its config or its state; it
// takes paths and argv from its caller and leaves policy (restarts,
// backoff) to it. The service is its owner, and the benchmarks and
// end-to-end tests use the owner side.
package guardian
