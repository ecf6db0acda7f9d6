package wire

// Code is the closed set of reasons a guardian gives for not starting.
type Code string

// The startup failure codes.
const (
	CodeContention Code = "contention"  // the identity is held; Holder says by whom
	CodeSpawn      Code = "spawn"       // the agent could not be started
	CodeLock       Code = "lock"        // the lock file could not be used
	CodePrivateDir Code = "private_dir" // the private directory could not be made
	CodeConfig     Code = "config"      // the request itself is invalid
	CodeInternal   Code = "internal"    // anything else
)

// SpawnCause refines CodeSpawn.
type SpawnCause string

// The spawn causes.
const (
	CauseNotFound      SpawnCause = "not_found"
	CauseNotExecutable SpawnCause = "not_executable"
	CauseBadDir        SpawnCause = "bad_dir"
	CauseExec          SpawnCause = "exec"
)

// CleanupCode is the closed set of teardown outcomes.
type CleanupCode string

// The cleanup codes.
const (
	CleanupOK         CleanupCode = "ok"
	CleanupTreeAlive  CleanupCode = "tree_alive"  // processes survived SIGKILL; the lock stays held
	CleanupPrivateDir CleanupCode = "private_dir" // the private directory could not be removed
	CleanupCgroup     CleanupCode = "cgroup"      // the agent's cgroup could not be removed
	CleanupInternal   CleanupCode = "internal"
)

// StopReason says what started a teardown.
type StopReason string

// The stop reasons.
const (
	ReasonStopRequested StopReason = "stop_requested"
	ReasonOwnerLost     StopReason = "owner_lost"
	ReasonSignal        StopReason = "signal"
	ReasonAgentExited   StopReason = "agent_exited"
	ReasonReclaimed     StopReason = "reclaimed"
	// ReasonNotReady: the readiness check did not pass within the start
	// timeout.
	ReasonNotReady StopReason = "not_ready"
	// ReasonWatchdog: a notify agent missed its watchdog ping, or asked
	// for the watchdog's action (WATCHDOG=trigger).
	ReasonWatchdog StopReason = "watchdog"
	// ReasonUnhealthy: the health check failed too many times in a row.
	ReasonUnhealthy StopReason = "unhealthy"
	// ReasonDeadline: no renewal of the identity's lease came in time:
	// the tree is stopped so that it is dead by the lease's deadline.
	ReasonDeadline StopReason = "deadline"
)
