package guardian

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tether-dev/tether/probe"
)

// ProtocolVersion is the version of the protocol. The first line each
// way on the tether carries the sender's version, and a side refuses a
// line of any other version with a message that names both.
const ProtocolVersion = 1

// versionOK says whether the other side's version v can be spoken with.
func versionOK(v int) bool { return v == ProtocolVersion }

// maxLine bounds one protocol line, its newline included; a start
// request with a large environment fits well inside it.
const maxLine = 1 << 20

// msgType names a protocol message.
type msgType string

const (
	msgStart         msgType = "start"          // owner -> guardian, first line
	msgStop          msgType = "stop"           // owner -> guardian
	msgReady         msgType = "ready"          // guardian -> owner, first line on success
	msgFailed        msgType = "failed"         // guardian -> owner, first line on failure
	msgExited        msgType = "exited"         // the agent exited on its own
	msgStopped       msgType = "stopped"        // teardown finished; the guardian exits next
	msgCleanupFailed msgType = "cleanup_failed" // the tree could not be confirmed dead; retrying
	msgAgentReady    msgType = "agent_ready"    // the agent passed its readiness check (after ready with Pending)
	msgStatus        msgType = "status"         // the agent's own status text changed (STATUS=)
	msgAttach        msgType = "attach"         // a new owner -> guardian: the tether is now mine (Owner, Profile)
	msgAttached      msgType = "attached"       // guardian -> new owner: the agent as it is now (Ready, Detail, MainPID)
	msgQuery         msgType = "query"          // anyone of the user -> waiting guardian: who are you
	msgWaiting       msgType = "waiting"        // waiting guardian -> asker: Waiting
)

// EventType names what a Session reports after ready. Each but EventLost
// is the message of the same name.
type EventType string

// The session events.
const (
	// EventExited: the agent exited on its own; the guardian is tearing
	// down the rest of the tree and an EventStopped follows.
	EventExited = EventType(msgExited)
	// EventCleanupFailed: the tree could not be confirmed dead. The
	// guardian keeps the lock and retries; Err says what is left.
	EventCleanupFailed = EventType(msgCleanupFailed)
	// EventStopped: teardown finished and the lock is free. Err is nil
	// or a *CleanupError for a warning such as an unremovable directory.
	EventStopped = EventType(msgStopped)
	// EventLost: the guardian exited without a stopped report (it was
	// killed). Its tree may live on with the lock; the next guardian for
	// the identity takes it over.
	EventLost EventType = "lost"
	// EventAgentReady: an agent whose Ready said Pending passed its
	// readiness check. Status is its STATUS= text, if any.
	EventAgentReady = EventType(msgAgentReady)
	// EventStatus: the agent's status text (Status) or main process
	// (MainPID) changed.
	EventStatus = EventType(msgStatus)
	// EventAttached: the guardian answered a new owner's attach with the
	// agent as it is now (Ready, Status, MainPID).
	EventAttached = EventType(msgAttached)
)

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

// request is the start request, the owner's first line. It carries
// everything the guardian needs, so nothing (least of all the agent's
// environment) appears on the guardian's argv.
type request struct {
	Identity    string   `json:"identity"`
	Profile     string   `json:"profile,omitempty"`
	Argv        []string `json:"argv"`
	Dir         string   `json:"dir,omitempty"`
	Env         []string `json:"env,omitempty"`
	StopTimeout Duration `json:"stop_timeout"`
	KillGrace   Duration `json:"kill_grace,omitempty"`
	LockDir     string   `json:"lock_dir"`
	PrivateRoot string   `json:"private_root"`
	LogPath     string   `json:"log_path,omitempty"`
	NoCgroup    bool     `json:"no_cgroup,omitempty"`
	// Readiness, when set, says how the agent is found ready and kept
	// healthy; nil: ready once spawned.
	Readiness *Readiness `json:"readiness,omitempty"`
	// Reclaim asks only to free the identity: stop an abandoned or
	// leftover tree, release the lock, answer stopped and exit.
	Reclaim bool `json:"reclaim,omitempty"`
	// SurviveCrash, when positive, keeps the tree for that long after
	// the owner's death, waiting at AdoptPath for a new owner of the
	// same Profile to attach.
	SurviveCrash Duration `json:"survive_crash,omitempty"`
	AdoptPath    string   `json:"adopt_path,omitempty"`
}

// message is one line on the tether. Only the fields of its Type are set.
type message struct {
	Type    msgType    `json:"type"`
	Version int        `json:"version,omitempty"`
	Time    time.Time  `json:"time"`
	Start   *request   `json:"start,omitempty"`
	Timeout *Duration  `json:"timeout,omitempty"` // stop
	Ready   *Ready     `json:"ready,omitempty"`
	Failure *failure   `json:"failure,omitempty"`
	Exit    *Exit      `json:"exit,omitempty"`
	Cleanup *Cleanup   `json:"cleanup,omitempty"`
	Retry   *Duration  `json:"retry_in,omitempty"` // cleanup_failed
	Reason  StopReason `json:"reason,omitempty"`   // stopped, cleanup_failed
	// Detail says more of the reason: what the readiness or health check
	// last saw (stopped), or the agent's status text (agent_ready,
	// status).
	Detail string `json:"detail,omitempty"`
	// MainPID is the agent's main process when it named another one
	// (MAINPID=) (agent_ready, status, attached).
	MainPID int `json:"main_pid,omitempty"`
	// Owner is the process of the new owner (attach): on Windows the
	// guardian watches it from then on.
	Owner *procRef `json:"owner,omitempty"`
	// Profile is the new owner's profile (attach): a guardian waiting to
	// be adopted refuses another profile's.
	Profile string `json:"profile,omitempty"`
	// Waiting describes a guardian waiting to be adopted (waiting).
	Waiting *Waiting `json:"waiting,omitempty"`
}

// Waiting is what a guardian waiting to be adopted says of itself.
type Waiting struct {
	Identity    string    `json:"identity"`
	Profile     string    `json:"profile"`
	GuardianPID int       `json:"guardian_pid"`
	AgentPID    int       `json:"agent_pid"`
	Since       time.Time `json:"since"` // the agent's start
	Orphaned    time.Time `json:"orphaned"`
	Until       time.Time `json:"until"` // the tree is stopped then unless adopted
}

// failure is the body of a failed answer.
type failure struct {
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
}

// Containment names the rung of the containment ladder an agent's tree
// got; the constants go from the strongest to the weakest. Every rung
// starts the agent in a session of its own. A guardian takes the
// strongest it can get and says in its log why not a stronger one.
type Containment string

// The containment rungs.
const (
	// ContainmentCgroup: a cgroup v2 of its own below the guardian's,
	// which is writable (root, or a unit with Delegate=yes); the agent is
	// cloned into it and teardown ends with cgroup.kill.
	ContainmentCgroup Containment = "cgroup"
	// ContainmentScope: the same, below a transient scope with
	// Delegate=yes that the user's systemd manager made for the
	// guardian, where no cgroup was writable.
	ContainmentScope Containment = "scope"
	// ContainmentSession: no cgroup; the session, and the child
	// subreapers (the guardian, and its owner) that descendants which
	// leave it come back to.
	ContainmentSession Containment = "session"
	// ContainmentJob: Windows' kill-on-close job object.
	ContainmentJob Containment = "job"
)

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
)

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

// Err returns nil for a clean teardown and a *CleanupError otherwise.
func (c *Cleanup) Err() error {
	if c == nil || c.Code == CleanupOK {
		return nil
	}
	return &CleanupError{Code: c.Code, Message: c.Message, Left: c.Left, Survivors: c.Survivors}
}

// Survivor is a process still alive after SIGKILL and the kill grace,
// and its state as the system reports it: on Linux and macOS a process
// state letter (D: in an uninterruptible wait, which ends only when the
// kernel call returns; Z: a zombie; T: stopped), empty where unknown.
type Survivor struct {
	PID   int    `json:"pid"`
	State string `json:"state,omitempty"`
}

// Duration is a time.Duration that travels as a string such as "5s".
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// lineReader reads protocol lines. A read that fails on a deadline (one
// set to hand the tether to another owner) keeps what it had read of a
// line, and rest returns every byte read off the tether but not yet
// returned as a message: the next owner's reader starts with them
// (newLineReaderAfter), so no message is lost or cut in two.
type lineReader struct {
	r       *bufio.Reader
	limit   int
	partial []byte
	// err ends the stream: a failed read (other than a deadline's), a
	// line over the limit, or the end.
	err error
}

func newLineReader(r io.Reader) *lineReader { return newLineReaderSize(r, maxLine) }

// newLineReaderSize reads lines of at most limit bytes, newline included.
func newLineReaderSize(r io.Reader, limit int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, min(4096, limit)), limit: limit}
}

// newLineReaderAfter reads first the bytes in pending, then r.
func newLineReaderAfter(pending []byte, r io.Reader) *lineReader {
	if len(pending) > 0 {
		r = io.MultiReader(bytes.NewReader(pending), r)
	}
	return newLineReader(r)
}

// warmCodecs encodes a message with every field of a pointer type set and
// decodes it again: encoding/json then holds the encoder and the fields of
// every protocol type, which it would otherwise build at the first real
// message.
func warmCodecs() {
	m := message{
		Start: &request{Readiness: &Readiness{Ready: &probe.Spec{}, Health: &HealthCheck{}}}, Timeout: new(Duration),
		Ready: &Ready{TookOver: &Holder{}}, Failure: &failure{Holder: &Holder{}}, Exit: &Exit{}, Cleanup: &Cleanup{}, Retry: new(Duration),
	}
	if b, err := json.Marshal(m); err == nil {
		_ = json.Unmarshal(b, &message{})
	}
}

// errProtocol reports a line that is not a protocol message.
var errProtocol = errors.New("protocol error")

// next returns the next message, io.EOF at a clean end, or an error. A
// line that is not a message is an errProtocol, and the next line follows;
// a line over the limit is an errProtocol too, but, like a failed read,
// it ends the stream: every later call returns the same error. A read
// cut by a deadline returns its error and ends nothing.
func (r *lineReader) next() (message, error) {
	if r.err != nil {
		return message{}, r.err
	}
	for {
		b, err := r.r.ReadSlice('\n')
		r.partial = append(r.partial, b...)
		complete := err == nil
		switch {
		case complete && len(r.partial) > r.limit, !complete && len(r.partial)+1 > r.limit:
			r.err = fmt.Errorf("%w: a line over %d bytes with its newline (%w)", errProtocol, r.limit, bufio.ErrTooLong)
			return message{}, r.err
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(r.partial) > 0:
			// The last line, without its newline; the end follows.
			r.err = io.EOF
		case errors.Is(err, os.ErrDeadlineExceeded):
			return message{}, err
		case err != nil:
			r.err = err
			return message{}, err
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(r.partial, []byte("\n")), []byte("\r"))
		r.partial = r.partial[:0]
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return message{}, fmt.Errorf("%w: %v", errProtocol, err)
		}
		if m.Type == "" {
			return message{}, fmt.Errorf("%w: line has no type", errProtocol)
		}
		return m, nil
	}
}

// rest returns what was read off the tether and not returned by next.
func (r *lineReader) rest() []byte {
	buffered, _ := r.r.Peek(r.r.Buffered())
	return append(append([]byte(nil), r.partial...), buffered...)
}

// writeMessage writes one line. Each message is one write, so a line is
// never interleaved with another.
func writeMessage(w io.Writer, m message) error {
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (d Duration) String() string { return time.Duration(d).String() }
