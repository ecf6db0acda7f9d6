package guardian

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tether-dev/tether/wire"
)

// Sentinels for errors.Is. A *StartError unwraps to the one of its Code, a
// *CleanupError to ErrCleanupFailed (and ErrTreeAlive for tree_alive).
var (
	ErrContention = errors.New("identity is held elsewhere")
	ErrSpawn      = errors.New("agent could not be started")
	ErrLock       = errors.New("ownership lock unusable")
	ErrPrivateDir = errors.New("private directory could not be created")
	ErrConfig     = errors.New("invalid start request")
	ErrInternal   = errors.New("guardian internal error")

	// ErrHandshake: the guardian gave no readable answer in time.
	ErrHandshake = errors.New("guardian handshake failed")
	// ErrGuardianLost: the guardian exited without reporting a teardown.
	ErrGuardianLost = errors.New("guardian exited unexpectedly")
	// ErrCleanupFailed: a teardown did not finish cleanly.
	ErrCleanupFailed = errors.New("cleanup failed")
	// ErrTreeAlive: processes of the tree survived SIGKILL; the lock is
	// still held while the guardian retries.
	ErrTreeAlive = errors.New("agent tree could not be confirmed dead")
	// ErrUnsupported: this platform has no guardian yet.
	ErrUnsupported = errors.New("guardian not supported on this platform")
)

var codeSentinels = map[wire.Code]error{
	wire.CodeContention: ErrContention,
	wire.CodeSpawn:      ErrSpawn,
	wire.CodeLock:       ErrLock,
	wire.CodePrivateDir: ErrPrivateDir,
	wire.CodeConfig:     ErrConfig,
	wire.CodeInternal:   ErrInternal,
}

// StartError is a typed refusal from the guardian, or a failure to get an
// answer from it.
type StartError struct {
	Identity string
	Code     wire.Code
	Message  string
	Path     string          // the file involved, if any
	Cause    wire.SpawnCause // for CodeSpawn
	Holder   *wire.Holder    // for CodeContention
	// Stderr is what the guardian wrote before it answered, for
	// handshake failures.
	Stderr string
	// handshake is set when no typed answer arrived.
	handshake error
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "starting guardian for %q: ", e.Identity)
	if e.handshake != nil {
		b.WriteString(e.handshake.Error())
	} else {
		b.WriteString(string(e.Code))
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(" (guardian stderr: " + s + ")")
	}
	return b.String()
}

// Reason is e without whose start it was and without its code, for a
// caller that says both already: the guardian's message (what went
// wrong with the handshake, when no typed answer came), and what the
// guardian wrote to its stderr before it answered.
func (e *StartError) Reason() string {
	var b strings.Builder
	switch {
	case e.handshake != nil:
		b.WriteString(e.handshake.Error())
	case e.Message != "":
		b.WriteString(e.Message)
	default:
		b.WriteString(string(e.Code))
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(" (stderr: " + s + ")")
	}
	return b.String()
}

// Unwrap lets errors.Is match the code's sentinel, and the spawn cause as
// fs.ErrNotExist or fs.ErrPermission.
func (e *StartError) Unwrap() []error {
	var out []error
	if e.handshake != nil {
		out = append(out, ErrHandshake, e.handshake)
	}
	if s, ok := codeSentinels[e.Code]; ok {
		out = append(out, s)
	}
	switch e.Cause {
	case wire.CauseNotFound:
		out = append(out, fs.ErrNotExist)
	case wire.CauseNotExecutable:
		out = append(out, fs.ErrPermission)
	}
	return out
}

// CleanupErr returns nil for a clean teardown and a *CleanupError
// otherwise.
func CleanupErr(c *wire.Cleanup) error {
	if c == nil || c.Code == wire.CleanupOK {
		return nil
	}
	return &CleanupError{Code: c.Code, Message: c.Message, Left: c.Left, Survivors: c.Survivors}
}

// CleanupError is a teardown that did not finish cleanly.
type CleanupError struct {
	Code    wire.CleanupCode
	Message string
	Left    []int
	// Survivors are Left with their states (tree_alive).
	Survivors []wire.Survivor
}

func (e *CleanupError) Error() string {
	return fmt.Sprintf("cleanup failed (%s): %s", e.Code, e.Message)
}

// Unwrap matches ErrCleanupFailed, and ErrTreeAlive for tree_alive.
func (e *CleanupError) Unwrap() []error {
	if e.Code == wire.CleanupTreeAlive {
		return []error{ErrCleanupFailed, ErrTreeAlive}
	}
	return []error{ErrCleanupFailed}
}
