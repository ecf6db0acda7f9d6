package wire

import (
	"fmt"
	"time"
)

// Version is the version of the protocol. The first line each way on
// the tether carries the sender's version, and a side refuses a line of
// any other version with a message that names both.
const Version = 1

// MsgType names a protocol message.
type MsgType string

// The message types.
const (
	MsgStart         MsgType = "start"          // owner -> guardian, first line
	MsgStop          MsgType = "stop"           // owner -> guardian
	MsgReady         MsgType = "ready"          // guardian -> owner, first line on success
	MsgFailed        MsgType = "failed"         // guardian -> owner, first line on failure
	MsgExited        MsgType = "exited"         // the agent exited on its own
	MsgStopped       MsgType = "stopped"        // teardown finished; the guardian exits next
	MsgCleanupFailed MsgType = "cleanup_failed" // the tree could not be confirmed dead; retrying
	MsgAgentReady    MsgType = "agent_ready"    // the agent passed its readiness check (after ready with Pending)
	MsgStatus        MsgType = "status"         // the agent's own status text changed (STATUS=)
	MsgAttach        MsgType = "attach"         // a new owner -> guardian: the tether is now mine (Owner, Profile)
	MsgAttached      MsgType = "attached"       // guardian -> new owner: the agent as it is now (Ready, Detail, MainPID)
	MsgQuery         MsgType = "query"          // anyone of the user -> waiting guardian: who are you
	MsgWaiting       MsgType = "waiting"        // waiting guardian -> asker: Waiting
	MsgDeadline      MsgType = "deadline"       // owner -> guardian: the tree must be dead within Deadline, unless renewed
	MsgGo            MsgType = "go"             // owner -> guardian, after a start with Hold: start the agent (Env, Deadline)
)

// KillMargin is the time a guardian leaves between the SIGKILL of its
// stop and a lease's deadline (MsgDeadline): the kill, and the reaping.
// It starts stopping the tree at the deadline less its stop timeout and
// KillMargin.
const KillMargin = 500 * time.Millisecond

// Failure is the body of a failed answer.
type Failure struct {
	Code    Code       `json:"code"`
	Message string     `json:"message"`
	Path    string     `json:"path,omitempty"`
	Cause   SpawnCause `json:"cause,omitempty"`
	Holder  *Holder    `json:"holder,omitempty"`
}

// Ready describes a started agent.
type Ready struct {
	GuardianPID int `json:"guardian_pid"`
	// GuardianStart is the guardian's start time, which with its pid
	// names it across pid reuse.
	GuardianStart uint64      `json:"guardian_start,omitempty"`
	AgentPID      int         `json:"agent_pid"`
	SessionID     int         `json:"session_id"`
	Containment   Containment `json:"containment"`
	Cgroup        string      `json:"cgroup,omitempty"`
	Scope         string      `json:"scope,omitempty"` // the transient scope unit holding the guardian, for ContainmentScope
	Job           string      `json:"job,omitempty"`   // Windows: the job object's name
	Subreaper     bool        `json:"subreaper"`
	PrivateDir    string      `json:"private_dir"`
	LockPath      string      `json:"lock_path"`
	Since         time.Time   `json:"since"`
	// TookOver names the guardian whose abandoned tree was stopped
	// before this start, if any.
	TookOver *Holder `json:"took_over,omitempty"`
	// Pending says the agent has a readiness check that has not passed
	// yet: an agent_ready message, or a stop with ReasonNotReady, follows.
	Pending bool `json:"pending,omitempty"`
	// Agent and Fingerprint are the start request's (guardian.Spec's
	// Agent and Fingerprint): an owner that adopts the tree learns from
	// them what the tree was started as.
	Agent       string `json:"agent,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Holder says who holds, or held, an identity.
type Holder struct {
	Identity    string    `json:"identity"`
	Profile     string    `json:"profile,omitempty"`
	GuardianPID int       `json:"guardian_pid"`
	AgentPID    int       `json:"agent_pid,omitempty"`
	Since       time.Time `json:"since"`
	// Unknown is set when the lock is held but no record says by whom.
	Unknown bool `json:"unknown,omitempty"`
	// Cleanup, when set, is the teardown this holder could not finish:
	// its tree could not be confirmed dead, and it keeps the identity
	// and retries (its owner may be gone).
	Cleanup *Cleanup `json:"cleanup,omitempty"`
}

func (h *Holder) String() string {
	if h == nil || h.Unknown {
		return "an unknown process"
	}
	s := fmt.Sprintf("guardian pid %d", h.GuardianPID)
	if h.Profile != "" {
		s += fmt.Sprintf(" of profile %q", h.Profile)
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.Format(time.RFC3339)
	}
	return s
}

// Exit is how the agent ended.
type Exit struct {
	Code   int    `json:"code"`             // -1 when killed by a signal
	Signal string `json:"signal,omitempty"` // e.g. "killed"
}

func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by signal: " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Cleanup is the outcome of a teardown.
type Cleanup struct {
	Code    CleanupCode `json:"code"`
	Message string      `json:"message,omitempty"`
	Left    []int       `json:"left,omitempty"` // pids still alive, for tree_alive
	// Survivors are the processes of Left with the state the system
	// reported for each (tree_alive).
	Survivors  []Survivor `json:"survivors,omitempty"`
	Terminated int        `json:"terminated"`
	Killed     int        `json:"killed"`
	Forced     bool       `json:"forced"` // the stop timeout ran out and SIGKILL followed
	Elapsed    Duration   `json:"elapsed"`
}

// Survivor is a process still alive after SIGKILL and the kill grace,
// and its state as the system reports it: on Linux and macOS a process
// state letter (D: in an uninterruptible wait, which ends only when the
// kernel call returns; Z: a zombie; T: stopped), empty where unknown.
type Survivor struct {
	PID   int    `json:"pid"`
	State string `json:"state,omitempty"`
}
