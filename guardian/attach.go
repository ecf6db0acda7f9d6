package guardian

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// A tether changes owner in two ways:
//
//   - An upgrade: the owner Detaches each Session, which stops reading at
//     a message boundary, and gives the tether, the bytes read off it but
//     not yet parsed (Handoff.Pending) and what it knew to its successor,
//     which makes a Session of them again with Attach. On Unix the
//     successor is the same process after execve; on Windows a new
//     process, into which the pipe end was duplicated. The guardian is
//     sent attach and answers attached.
//   - An adoption: a guardian whose owner died while it had
//     survive_crash waits at its adopt socket; a new owner of the same
//     profile dials it, sends attach and gets attached (Adopt).

// ErrDetached: the session was handed to another owner (Release), or is
// parked by Detach.
var ErrDetached = errors.New("the tether was handed to another owner")

// ErrSessionEnded: the session ended (its guardian stopped or died)
// before it could be detached.
var ErrSessionEnded = errors.New("the session ended")

// Handoff is a tether taken from its Session for a new owner: the
// Session's reader is parked at a message boundary and nothing more is
// read until Resume or Release.
type Handoff struct {
	s *Session
	// Pending holds the bytes read off the tether and not yet parsed:
	// the start of the next message, if any. The next owner reads them
	// first.
	Pending []byte
}

// Detach parks the session's reader at a message boundary and returns the
// tether for another owner. Every report read before is delivered on
// Events, which the caller must go on draining until Detach returns; none
// after is read. It fails with ErrSessionEnded when the guardian ended
// first (its final event is on Events).
func (s *Session) Detach() (*Handoff, error) {
	d := s.BeginDetach()
	select {
	case pending := <-d.Parked():
		return d.Handoff(pending), nil
	case <-s.done:
		return nil, d.Ended()
	}
}

// Detaching is a Detach begun (BeginDetach): the owner waits for Parked,
// or for the session's Done, while it drains Events itself, with no
// goroutine of its own for the wait.
type Detaching struct {
	s     *Session
	reply chan []byte
}

// BeginDetach asks the session's reader to park at a message boundary and
// returns at once. Parked then yields the bytes read and not yet parsed,
// once the reader has parked; if Done is closed first, the session ended
// before it could be detached, and Ended says so.
func (s *Session) BeginDetach() *Detaching {
	d := &Detaching{s: s, reply: make(chan []byte, 1)}
	s.parkFlag.Store(true)
	// Left for the reader, which takes it when it parks: park holds one.
	// It is full only with the reply of a detach whose session ended,
	// and then this one's session has ended too (Done is closed).
	select {
	case s.park <- d.reply:
	default:
	}
	// Wake the reader, if it waits in a read: it parks at once, with
	// what it had of a line kept for the next owner.
	_ = s.conn.SetReadDeadline(time.Unix(1, 0))
	return d
}

// Parked yields the reader's unread bytes once it has parked.
func (d *Detaching) Parked() <-chan []byte { return d.reply }

// Handoff is the tether of a parked session, with the bytes Parked
// yielded.
func (d *Detaching) Handoff(pending []byte) *Handoff { return &Handoff{s: d.s, Pending: pending} }

// Ended is what a detach whose session ended first comes to:
// ErrSessionEnded.
func (d *Detaching) Ended() error {
	d.s.parkFlag.Store(false)
	return ErrSessionEnded
}

// parkHere is run's side of Detach: it hands over what it read and waits
// for Resume (true) or Release (false).
func (s *Session) parkHere() bool {
	reply := <-s.park
	reply <- s.rd.rest()
	resume := <-s.unpark
	if resume {
		s.parkFlag.Store(false)
		_ = s.conn.SetReadDeadline(time.Time{})
	}
	return resume
}

// Resume gives the tether back to its session, which reads on from where
// it stopped: the handover did not happen.
func (h *Handoff) Resume() { h.s.unpark <- true }

// Release ends the session's hold on the tether without closing it or
// reaping the guardian: the next owner has both (on Unix the same
// process after execve). Events is left open and never closed.
func (h *Handoff) Release() { h.s.unpark <- false }

// SyscallConn returns the tether's descriptor, for its handover (on Unix
// its close-on-exec flag is cleared; on Windows the handle is duplicated
// into the successor).
func (h *Handoff) SyscallConn() (syscall.RawConn, error) {
	sc, ok := h.s.conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("the tether of %q (%T) has no descriptor", h.s.spec.Identity, h.s.conn)
	}
	return sc.SyscallConn()
}

// Session returns the detached session.
func (h *Handoff) Session() *Session { return h.s }

// Attachment is a tether handed over by the previous owner, as the
// successor finds it.
type Attachment struct {
	Conn tetherConn
	// Proc is the guardian: on Unix a child of this process (the same
	// process as the previous owner after execve), to be reaped; on
	// Windows a process watched by its handle.
	Proc guardianProcess
	// Version is the guardian's protocol version: one other than
	// wire.Version is refused.
	Version int
	// Ready is what the previous owner knew of the agent.
	Ready wire.Ready
	// Pending are the bytes the previous owner had read and not parsed.
	Pending []byte
	// Owner is this process, the guardian's new owner (sent with
	// attach).
	Owner platform.Ref
	// Later defers attach until SendAttach: a successor that serves its
	// API first, and then wakes every guardian.
	Later bool
}

// Attach makes a Session of a tether handed over by the previous owner.
// The guardian is sent attach: its attached answer arrives as an
// EventAttached, and Attached is closed then.
func Attach(spec Spec, a Attachment) (*Session, error) {
	if !versionOK(a.Version) {
		return nil, fmt.Errorf("attaching the guardian of %q: it speaks protocol version %d; this tether speaks %d", spec.Identity, a.Version, wire.Version)
	}
	// A deadline the previous owner left to park its reader (in this
	// very process, after execve or in a test) must not cut this one.
	_ = a.Conn.SetReadDeadline(time.Time{})
	s := newSession(spec, a.Conn, newLineReaderAfter(a.Pending, a.Conn), a.Proc)
	s.ready, s.version, s.owner = a.Ready, a.Version, a.Owner
	go s.run()
	if !a.Later {
		s.SendAttach()
	}
	return s, nil
}

// SendAttach tells the guardian of an attached session that this process
// owns its tether now. A failed write means the guardian is gone or going: its EOF
// follows, and with it the lost event.
func (s *Session) SendAttach() {
	owner := s.owner
	_ = s.write(message{Type: wire.MsgAttach, Version: wire.Version, Owner: &owner, Profile: s.spec.Profile})
}

// Attached is closed once the guardian has answered attach, or the
// session has ended.
func (s *Session) Attached() <-chan struct{} { return s.attached }

// processWatch is a guardian that is not this process's child (an
// adopted one): it cannot be reaped, only seen gone.
type processWatch struct {
	ref platform.Ref
}

func (p processWatch) Pid() int { return p.ref.Pid }

// Wait returns once the process is gone. It is called after the tether's
// EOF, which the guardian's exit causes, so the wait is short; it is
// bounded all the same.
func (p processWatch) Wait() error {
	deadline := time.Now().Add(10 * time.Second)
	for platform.Alive(p.ref) {
		if time.Now().After(deadline) {
			return fmt.Errorf("guardian pid %d still runs after closing its tether", p.ref.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// WatchedProcess returns the guardian ref names, for an Attachment whose
// guardian is not this process's child.
func WatchedProcess(ref platform.Ref) guardianProcess { return processWatch{ref: ref} }

// ClaimChild counts pid, a child of this process started before an
// execve, as its own from now on, as Start counts the guardians it
// starts: an owner that adopts orphans never takes it for one. Call it
// before the adoption of orphans begins, and once per child.
func ClaimChild(pid int) { claimChild(pid) }

// ChildProcess returns the guardian of pid, a child of this process
// claimed by ClaimChild, for an Attachment: Wait reaps it and ends the
// claim.
func ChildProcess(pid int) (guardianProcess, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil, err
	}
	return childProcess{p}, nil
}

type childProcess struct{ p *os.Process }

func (c childProcess) Pid() int { return c.p.Pid }

func (c childProcess) Wait() error {
	st, err := c.p.Wait()
	guardianReaped(c.p.Pid)
	if err != nil {
		return err
	}
	if !st.Success() {
		return errors.New(st.String())
	}
	return nil
}
