package guardian

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/tether-dev/tether/wire"
)

// stderrLimit bounds what is kept of a guardian's stderr for error
// messages.
const stderrLimit = 16 << 10

// Start spawns a guardian for spec and waits for its answer. On success
// the agent runs and the returned Session owns it; when the Session's
// owner process dies, the guardian tears the tree down. On failure the
// error is a *StartError (match it with errors.Is against ErrContention,
// ErrSpawn, ErrLock, ErrPrivateDir, ErrConfig, ErrInternal or ErrHandshake)
// and nothing is left running: a guardian that answered is reaped before
// Start returns or, if it hangs, in the background.
func Start(ctx context.Context, spec Spec) (*Session, error) {
	req, prog, err := prepare(&spec)
	if err != nil {
		return nil, err
	}
	g, err := spawn(prog)
	if err != nil {
		return nil, &StartError{Identity: spec.Identity, Code: wire.CodeInternal, Message: err.Error()}
	}
	return g.handshake(ctx, spec, req)
}

// prepare fills spec's defaults and builds the start request, and
// returns the guardian program to run (see ProgramFor).
func prepare(spec *Spec) (*request, Program, error) {
	if spec.StopTimeout == 0 {
		spec.StopTimeout = DefaultStopTimeout
	}
	if spec.HandshakeTimeout == 0 {
		spec.HandshakeTimeout = 10 * time.Second
	}
	exe := spec.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, Program{}, &StartError{Identity: spec.Identity, Code: wire.CodeInternal, Message: "finding the tether executable: " + err.Error()}
		}
	}
	req := &request{
		Identity: spec.Identity, Profile: spec.Profile, Argv: spec.Argv, Dir: spec.Dir, Env: spec.Env,
		StopTimeout: wire.Duration(spec.StopTimeout), KillGrace: wire.Duration(spec.KillGrace), LockDir: spec.LockDir, PrivateRoot: spec.PrivateRoot,
		LogPath: spec.LogPath, Logs: spec.Logs, NoCgroup: spec.NoCgroup, Readiness: spec.Readiness,
		SurviveCrash: wire.Duration(spec.SurviveCrash), AdoptPath: spec.AdoptPath,
		Agent: spec.Agent, Fingerprint: spec.Fingerprint,
	}
	if err := req.validate(); err != nil {
		return nil, Program{}, &StartError{Identity: spec.Identity, Code: wire.CodeConfig, Message: err.Error()}
	}
	return req, ProgramFor(exe), nil
}

// spawned is a guardian process that has not been sent its start request
// yet: it waits on its tether, with no timer, until it gets one or EOF.
type spawned struct {
	prog   Program
	conn   *os.File
	proc   *execProcess
	stderr *cappedBuffer
}

// spawn starts a guardian process running prog, tied to this one by the
// tether.
func spawn(prog Program) (*spawned, error) {
	// This process's end is never inheritable, and the guardian's end is
	// handed to the guardian alone (I6): see guardianCommand.
	cmd, conn, guardEnd, err := guardianCommand(prog)
	if err != nil {
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		guardEnd.Close()
		conn.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stderr = stderrW
	err = startGuardian(cmd)
	guardEnd.Close()
	stderrW.Close()
	if err != nil {
		stderrR.Close()
		conn.Close()
		return nil, fmt.Errorf("starting the guardian: %w", err)
	}
	stderr := &cappedBuffer{max: stderrLimit}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderr, stderrR)
		stderrR.Close()
	}()
	return &spawned{prog: prog, conn: conn, proc: &execProcess{cmd: cmd, stderrDone: stderrDone}, stderr: stderr}, nil
}

// discard closes a guardian that was never used: on EOF before any
// request it exits at once. It is reaped in the background.
func (g *spawned) discard() {
	g.conn.Close()
	go func() { _ = g.proc.Wait() }()
}

// handshake sends the start request and waits for the answer.
func (g *spawned) handshake(ctx context.Context, spec Spec, req *request) (*Session, error) {
	h, err := g.send(spec, req)
	if err != nil {
		return nil, err
	}
	return h.answer(ctx, nil)
}

// Held is a start whose guardian prepares it (takes the lock, builds the
// containment and the private directory) and waits for Go before it
// starts the agent: the owner learns meanwhile what the agent's start
// needs (its lease's fencing token and deadline). Exactly one of Go and
// Abort must follow.
type Held struct {
	g    *spawned
	spec Spec
	s    *Session
	rd   *lineReader
}

// send writes the start request req to the guardian and returns the
// start, whose answer is to be read.
func (g *spawned) send(spec Spec, req *request) (*Held, error) {
	rd := newLineReader(g.conn)
	s := newSession(spec, g.conn, rd, g.proc)
	h := &Held{g: g, spec: spec, s: s, rd: rd}
	if !spec.Deadline.IsZero() && !req.Hold {
		// Counted as late as can be: the guardian counts from its read.
		d := wire.Duration(time.Until(spec.Deadline))
		if d <= 0 {
			return nil, h.failed(fmt.Errorf("the lease's deadline passed before the start request was sent"))
		}
		req.Deadline = &d
	}
	if err := s.write(message{Type: wire.MsgStart, Version: wire.Version, Start: req}); err != nil {
		return nil, h.failed(fmt.Errorf("sending the start request: %w", err))
	}
	return h, nil
}

// Go starts the agent of a held start, its environment extended by env,
// its tree to be dead by deadline unless renewed (zero: no deadline), and
// waits for the guardian's answer, as Start does.
func (h *Held) Go(ctx context.Context, env []string, deadline time.Time) (*Session, error) {
	m := message{Type: wire.MsgGo, Env: env}
	if !deadline.IsZero() {
		d := wire.Duration(time.Until(deadline))
		if d <= 0 {
			h.Abort()
			return nil, &StartError{Identity: h.spec.Identity, handshake: fmt.Errorf("the lease's deadline passed before the start went ahead")}
		}
		m.Deadline = &d
	}
	// A guardian whose preparation failed has answered already and
	// exited: its answer is read whether or not this write went through.
	werr := h.s.write(m)
	return h.answer(ctx, werr)
}

// Abort gives up a held start before Go: the guardian undoes what it
// prepared and exits, and is reaped in the background.
func (h *Held) Abort() { h.reapLater() }

// reapLater closes the tether, which tells the guardian its owner is
// gone, and reaps the guardian in the background.
func (h *Held) reapLater() {
	h.g.conn.Close()
	go func() { _ = h.g.proc.Wait(); close(h.s.done) }()
}

// failed is a handshake that failed: it closes the tether, which tells
// the guardian its owner is gone, so that it undoes whatever it had done,
// then exits and is reaped. A guardian that is exiting anyway is given a
// moment, so its stderr can explain the failure.
func (h *Held) failed(err error) *StartError {
	h.reapLater()
	se := &StartError{Identity: h.spec.Identity, handshake: err}
	select {
	case <-h.s.done:
		se.Stderr = h.g.stderr.String()
	case <-time.After(500 * time.Millisecond):
	}
	return se
}

// answer reads the guardian's answer to the start; werr, when not nil,
// is the error of the last write, reported if no answer came.
func (h *Held) answer(ctx context.Context, werr error) (*Session, error) {
	spec, s := h.spec, h.s
	m, err := handshake(ctx, h.g.conn, h.rd, spec.HandshakeTimeout)
	if err != nil {
		if werr != nil {
			err = fmt.Errorf("sending go: %w", werr)
		}
		return nil, h.failed(err)
	}
	s.version = m.Version
	switch {
	case m.Type == wire.MsgReady && m.Ready != nil:
		s.ready = *m.Ready
		go s.run()
		return s, nil
	case m.Type == wire.MsgFailed && m.Failure != nil:
		h.reapLater()
		f := m.Failure
		se := &StartError{Identity: spec.Identity, Code: f.Code, Message: f.Message, Path: f.Path, Cause: f.Cause, Holder: f.Holder}
		if _, ok := codeSentinels[f.Code]; !ok {
			se.Code = wire.CodeInternal
			se.Message = fmt.Sprintf("unknown failure code %q: %s", f.Code, f.Message)
		}
		// A guardian that answered exits at once; wait briefly so
		// the common case returns with the guardian already reaped.
		select {
		case <-s.done:
		case <-time.After(time.Second):
		}
		return nil, se
	default:
		h.reapLater()
		return nil, &StartError{Identity: spec.Identity, handshake: fmt.Errorf("unexpected first answer %q", m.Type)}
	}
}

type execProcess struct {
	cmd        *exec.Cmd
	stderrDone chan struct{}
}

func (p *execProcess) Pid() int { return p.cmd.Process.Pid }

func (p *execProcess) Wait() error {
	err := p.cmd.Wait()
	guardianReaped(p.cmd.Process.Pid)
	<-p.stderrDone
	return err
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// Reclaim frees an identity whose guardian died (Session's EventLost): a
// guardian is started only to stop the abandoned tree (or what is left of
// it), remove its private directory and release the lock, and then exits.
// It returns nil once the identity is free, or a *StartError: contention
// when a live guardian holds the identity (nothing to reclaim), or the
// failure to stop the tree.
func Reclaim(ctx context.Context, spec Spec) error {
	req, prog, err := prepare(&spec)
	if err != nil {
		return err
	}
	req.Reclaim = true
	g, err := spawn(prog)
	if err != nil {
		return &StartError{Identity: spec.Identity, Code: wire.CodeInternal, Message: err.Error()}
	}
	return g.reclaim(ctx, spec, req)
}

func (g *spawned) reclaim(ctx context.Context, spec Spec, req *request) error {
	defer func() {
		g.conn.Close()
		_ = g.proc.Wait()
	}()
	if err := writeMessage(g.conn, message{Type: wire.MsgStart, Version: wire.Version, Start: req}); err != nil {
		return &StartError{Identity: spec.Identity, handshake: fmt.Errorf("sending the reclaim request: %w", err)}
	}
	// Stopping an abandoned tree takes up to its stop timeout and the
	// kill grace.
	timeout := spec.HandshakeTimeout + spec.StopTimeout + max(spec.KillGrace, 2*time.Second)
	m, err := handshake(ctx, g.conn, newLineReader(g.conn), timeout)
	if err != nil {
		return &StartError{Identity: spec.Identity, handshake: err, Stderr: g.stderr.String()}
	}
	switch {
	case m.Type == wire.MsgStopped:
		return nil
	case m.Type == wire.MsgFailed && m.Failure != nil:
		f := m.Failure
		return &StartError{Identity: spec.Identity, Code: f.Code, Message: f.Message, Path: f.Path, Holder: f.Holder}
	default:
		return &StartError{Identity: spec.Identity, handshake: fmt.Errorf("unexpected answer %q to a reclaim", m.Type)}
	}
}
