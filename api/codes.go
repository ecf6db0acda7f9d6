package api

// Code is the closed set of error codes: the "code" of an Error, in the
// body of a failed API request, in an action's Result, on an Agent row
// (and so in `tether status --json`), and in a Status's state_error and
// config_error. Each maps to one exit code of the command line: 4 for
// contention, 5 for cleanup_failed, 1 for every other code.
type Code string

// The error codes.
const (
	// CodeNotFound: no agent with that id, or no such API path (HTTP
	// 404).
	CodeNotFound Code = "not_found"
	// CodeBadRequest: the request is malformed: no ids, a bad body or
	// parameter, a wrong method (HTTP 400, 405 or 413).
	CodeBadRequest Code = "bad_request"
	// CodeContention: the identity is held elsewhere (another profile,
	// another tether); the message names the holder. On a row in backoff
	// the start is being retried; in failed the retries have given up
	// (HTTP 409, exit 4).
	CodeContention Code = "contention"
	// CodeCleanupFailed: a stop could not be confirmed. On a row in
	// cleanup_failed the tree is alive and the identity stays locked; in
	// stopped the tree is gone but something of it (its private
	// directory, its cgroup) could not be removed (exit 5).
	CodeCleanupFailed Code = "cleanup_failed"
	// CodeSpawn: the agent could not be started: its command was not
	// found or is not executable, or its directory is unusable.
	CodeSpawn Code = "spawn"
	// CodeConfig: the config is invalid: in config_error after a
	// rejected reload (the running config stays in force), or on a row
	// whose env_file could not be read at start (HTTP 422).
	CodeConfig Code = "config"
	// CodeState: the durable state file is unusable: in state_error, and
	// in the answer to an action whose intent could not be saved.
	CodeState Code = "state"
	// CodeForbidden: the caller is not the service's user, or the request
	// came from a browser (HTTP 403).
	CodeForbidden Code = "forbidden"
	// CodeLock: the identity's ownership lock or its owner record could
	// not be used: the lock directory or file is unsafe (a link, another
	// owner, a wrong mode) or could not be opened or written (EACCES,
	// ENOSPC). The message names the file.
	CodeLock Code = "lock"
	// CodePrivateDir: the agent's private directory, or the directory
	// that holds them, could not be made (EACCES, ENOSPC, an unsafe
	// path). The message names the directory.
	CodePrivateDir Code = "private_dir"
	// CodeInternal: anything else, such as a guardian that died without
	// reporting its teardown (HTTP 500).
	CodeInternal Code = "internal"
	// CodeExited: the agent ended on its own with a non-zero status or a
	// signal, or it exited leaving processes running, which its guardian
	// stopped; the message says how, and how many it left. On a row in
	// backoff it is being restarted; in failed its restart policy does
	// not restart it; in stopped it exited 0 and left processes.
	CodeExited Code = "exited"
	// CodeCrashLoop: the agent failed as many times as its config's
	// crash_loop allows within its window; its row is failed and it is
	// not restarted until someone starts it again. The message quotes
	// the last ending.
	CodeCrashLoop Code = "crash_loop"
	// CodeNotReady: the agent's readiness check did not pass within its
	// start_timeout (or an fd agent closed its descriptor without the
	// newline); its tree was stopped and the row is failed. The message
	// says what the check last saw.
	CodeNotReady Code = "not_ready"
	// CodeWatchdog: a notify agent missed its watchdog ping, or sent
	// WATCHDOG=trigger; it was stopped and is restarted by its policy.
	CodeWatchdog Code = "watchdog"
	// CodeUnhealthy: the agent's health check failed its failures times
	// in a row; it was stopped and is restarted by its policy.
	CodeUnhealthy Code = "unhealthy"
	// CodeDependency: an agent this one requires could not run, or
	// stopped; the message names which. The row is failed (the start was
	// refused) or stopped (it was stopped with its dependency).
	CodeDependency Code = "dependency"
	// CodeLease: the identity's lease in etcd could not be had or kept:
	// etcd is out of reach or has no quorum, or the lease could not be
	// renewed in time and the tree was stopped before it could expire
	// (I10). On a row in backoff the start is tried again.
	CodeLease Code = "lease"
	// CodeUpgrade: an upgrade of the service did not happen: the new
	// binary failed its check (it does not run, or speaks no handover
	// or protocol version the running one does), the handover could not
	// be made, or the exec failed. The running service goes on as it
	// was, with every agent; the message says why.
	CodeUpgrade Code = "upgrade"
	// CodeHandingOver: the service began to hand over to another binary
	// (an upgrade under way) before it could take this request: ask
	// again once it answers, and its successor will.
	CodeHandingOver Code = "handing_over"
	// CodeUnreachable: what the agent needs (its config's needs) was
	// unreachable when it was to start, or when it ended; the row is
	// offline and the message says what was tried. The ending does not
	// count toward a crash loop.
	CodeUnreachable Code = "unreachable"
	// CodeSecret: a secret of the agent's could not be read when it was
	// to start: its keychain entry is missing, the keychain could not be
	// reached or unlocked, or its command failed, timed out or printed
	// nothing. Nothing was started; the row is failed, and the restart
	// policy does not retry it. The message names the variable, its
	// reference and why, never a value.
	CodeSecret Code = "secret"
)

// Codes returns every error code.
func Codes() []Code {
	return []Code{CodeNotFound, CodeBadRequest, CodeContention, CodeCleanupFailed, CodeSpawn, CodeConfig,
		CodeState, CodeForbidden, CodeLock, CodePrivateDir, CodeInternal, CodeExited, CodeCrashLoop, CodeNotReady,
		CodeWatchdog, CodeUnhealthy, CodeDependency, CodeLease, CodeUpgrade, CodeHandingOver, CodeUnreachable, CodeSecret}
}

// AgentCodes returns the codes an Agent row's Error can carry: why its
// last start failed, how it last ended, or what its cleanup left.
func AgentCodes() []Code {
	return []Code{CodeContention, CodeCleanupFailed, CodeSpawn, CodeConfig, CodeLock, CodePrivateDir, CodeInternal,
		CodeExited, CodeCrashLoop, CodeNotReady, CodeWatchdog, CodeUnhealthy, CodeDependency, CodeLease, CodeUnreachable, CodeSecret}
}
