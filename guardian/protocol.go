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

	"github.com/tether-dev/tether/logfile"
	"github.com/tether-dev/tether/probe"
	"github.com/tether-dev/tether/wire"
)

// maxLine bounds one protocol line, its newline included; a start
// request with a large environment fits well inside it.
const maxLine = 1 << 20

// EventType names what a Session reports after ready. Each but EventLost
// is the message of the same name.
type EventType string

// The session events.
const (
	// EventExited: the agent exited on its own; the guardian is tearing
	// down the rest of the tree and an EventStopped follows.
	EventExited = EventType(wire.MsgExited)
	// EventCleanupFailed: the tree could not be confirmed dead. The
	// guardian keeps the lock and retries; Err says what is left.
	EventCleanupFailed = EventType(wire.MsgCleanupFailed)
	// EventStopped: teardown finished and the lock is free. Err is nil
	// or a *CleanupError for a warning such as an unremovable directory.
	EventStopped = EventType(wire.MsgStopped)
	// EventLost: the guardian exited without a stopped report (it was
	// killed). Its tree may live on with the lock; the next guardian for
	// the identity takes it over.
	EventLost EventType = "lost"
	// EventAgentReady: an agent whose Ready said Pending passed its
	// readiness check. Status is its STATUS= text, if any.
	EventAgentReady = EventType(wire.MsgAgentReady)
	// EventStatus: the agent's status text (Status) or main process
	// (MainPID) changed.
	EventStatus = EventType(wire.MsgStatus)
	// EventAttached: the guardian answered a new owner's attach with the
	// agent as it is now (Ready, Status, MainPID).
	EventAttached = EventType(wire.MsgAttached)
)

// request is the start request, the owner's first line. It carries
// everything the guardian needs, so nothing (least of all the agent's
// environment) appears on the guardian's argv.
type request struct {
	Identity    string        `json:"identity"`
	Profile     string        `json:"profile,omitempty"`
	Argv        []string      `json:"argv"`
	Dir         string        `json:"dir,omitempty"`
	Env         []string      `json:"env,omitempty"`
	StopTimeout wire.Duration `json:"stop_timeout"`
	KillGrace   wire.Duration `json:"kill_grace,omitempty"`
	LockDir     string        `json:"lock_dir"`
	PrivateRoot string        `json:"private_root"`
	LogPath     string        `json:"log_path,omitempty"`
	NoCgroup    bool          `json:"no_cgroup,omitempty"`
	// Readiness, when set, says how the agent is found ready and kept
	// healthy; nil: ready once spawned.
	Readiness *Readiness `json:"readiness,omitempty"`
	// Logs is how the log is written and rotated; nil: logfile.Default.
	Logs *logfile.Policy `json:"logs,omitempty"`
	// Reclaim asks only to free the identity: stop an abandoned or
	// leftover tree, release the lock, answer stopped and exit.
	Reclaim bool `json:"reclaim,omitempty"`
	// SurviveCrash, when positive, keeps the tree for that long after
	// the owner's death, waiting at AdoptPath for a new owner of the
	// same Profile to attach.
	SurviveCrash wire.Duration `json:"survive_crash,omitempty"`
	AdoptPath    string        `json:"adopt_path,omitempty"`
	// Agent and Fingerprint are the owner's names for the agent and for
	// what it asked to run, given back in every Ready (see Spec).
	Agent       string `json:"agent,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Deadline, when set, is the time left, as the request is sent,
	// until the tree must be dead unless a deadline message renews it:
	// the agent's identity is held under a lease (see Spec.Deadline).
	Deadline *wire.Duration `json:"deadline,omitempty"`
	// Hold asks the guardian to prepare the start (the lock, the
	// containment, the private directory) and then wait for a go message
	// before it starts the agent; EOF instead undoes the start quietly.
	// The deadline, if any, comes with the go.
	Hold bool `json:"hold,omitempty"`
}

// message is one line on the tether. Only the fields of its Type are set.
type message struct {
	Type    wire.MsgType    `json:"type"`
	Version int             `json:"version,omitempty"`
	Time    time.Time       `json:"time"`
	Start   *request        `json:"start,omitempty"`
	Timeout *wire.Duration  `json:"timeout,omitempty"` // stop
	Ready   *wire.Ready     `json:"ready,omitempty"`
	Failure *wire.Failure   `json:"failure,omitempty"`
	Exit    *wire.Exit      `json:"exit,omitempty"`
	Cleanup *wire.Cleanup   `json:"cleanup,omitempty"`
	Retry   *wire.Duration  `json:"retry_in,omitempty"` // cleanup_failed
	Reason  wire.StopReason `json:"reason,omitempty"`   // stopped, cleanup_failed
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
	Waiting *wire.Waiting `json:"waiting,omitempty"`
	// Deadline is the time left, as the message is sent, until the tree
	// must be dead unless another deadline comes (deadline, go).
	Deadline *wire.Duration `json:"deadline,omitempty"`
	// Env is added to the agent's environment (go).
	Env []string `json:"env,omitempty"`
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
		Start: &request{Readiness: &Readiness{Ready: &probe.Spec{}, Health: &HealthCheck{}}, Deadline: new(wire.Duration)}, Timeout: new(wire.Duration), Deadline: new(wire.Duration),
		Ready: &wire.Ready{TookOver: &wire.Holder{}}, Failure: &wire.Failure{Holder: &wire.Holder{}}, Exit: &wire.Exit{}, Cleanup: &wire.Cleanup{}, Retry: new(wire.Duration),
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

// versionOK says whether the other side's version v can be spoken with.
func versionOK(v int) bool { return v == wire.Version }
