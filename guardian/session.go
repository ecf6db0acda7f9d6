package guardian

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// Event is one report from a running session.
type Event struct {
	Type    EventType
	Time    time.Time
	Reason  wire.StopReason
	Exit    *wire.Exit    // EventExited, and EventStopped when known
	Cleanup *wire.Cleanup // EventStopped and EventCleanupFailed
	// Err is the typed error of the event: a *CleanupError, or
	// ErrGuardianLost wrapped with the guardian's exit status.
	Err error
	// Detail says more of Reason (EventStopped): what a readiness,
	// watchdog or health check last saw.
	Detail string
	// Status is the agent's own status text (EventAgentReady,
	// EventStatus).
	Status string
	// MainPID is the process the agent named as its main one
	// (EventStatus, EventAttached), zero when it named none.
	MainPID int
	// Ready is the agent as the guardian reported it to a new owner
	// (EventAttached): its pids, and Pending while its readiness check
	// has not passed.
	Ready *wire.Ready
}

// Session is the owner's handle on one running guardian.
type Session struct {
	spec    Spec
	ready   wire.Ready
	version int          // the protocol version spoken with the guardian
	owner   platform.Ref // this process, for attach
	conn    tetherConn
	proc    guardianProcess
	// rd is the tether's reader; run owns it. Detach parks run and
	// hands rd's unread bytes to the next owner.
	rd *lineReader

	park     chan chan []byte // Detach leaves run where to hand over, once it stopped reading at a message boundary
	unpark   chan bool        // true: read on (Resume); false: let go (Release)
	parkFlag atomic.Bool      // set by Detach while it waits for run to park
	attached chan struct{}    // closed once the guardian answered attach (or the session ended)
	attachOK sync.Once

	events  chan Event
	stopped chan struct{} // closed when stopped arrives or the guardian is gone
	done    chan struct{} // closed once the guardian has been reaped

	mu      sync.Mutex
	final   *Event // the stopped or lost event
	lastErr error  // the outcome of the latest cleanup_failed, stopped or lost
	writeMu sync.Mutex
}

// tetherConn is the owner's end of a tether: a socket or pipe served by
// the runtime's poller (an *os.File of a socket pair or duplex pipe, or
// the connection an adoption came in on).
type tetherConn interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// guardianProcess is the OS half of a spawned guardian.
type guardianProcess interface {
	Pid() int
	// Wait reaps the guardian; it is called exactly once.
	Wait() error
}

// eventBuffer bounds the reports queued for a slow reader. A guardian
// sends at most a handful, plus one per cleanup retry (at most one every
// 30 s).
const eventBuffer = 256

// Ready returns what the guardian reported when the agent started (for
// an attached session, what the owner before knew).
func (s *Session) Ready() wire.Ready { return s.ready }

// Version returns the protocol version spoken with the guardian.
func (s *Session) Version() int { return s.version }

// GuardianPID returns the guardian's process id.
func (s *Session) GuardianPID() int { return s.proc.Pid() }

// Identity returns the identity this session holds.
func (s *Session) Identity() string { return s.spec.Identity }

// Events delivers the session's reports in order. It is closed after the
// final event (stopped or lost) once the guardian has been reaped.
func (s *Session) Events() <-chan Event { return s.events }

// Done is closed once the guardian has exited and been reaped.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stop asks the guardian to tear the tree down, giving it timeout between
// SIGTERM and SIGKILL (zero: the Spec's), and waits until the teardown
// has finished, the guardian is gone, or ctx ends. The result is nil for
// a clean stop, a *CleanupError for a stop with a cleanup problem, an
// error matching ErrGuardianLost when the guardian died first, or ctx's
// error. A second Stop waits for the same result.
func (s *Session) Stop(ctx context.Context, timeout time.Duration) error {
	// A failed request means the guardian is gone or going; its final
	// event says which.
	_ = s.RequestStop(timeout)
	select {
	case <-s.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final.Err
}

// RequestStop asks the guardian to tear the tree down and returns without
// waiting; the outcome arrives as events (cleanup_failed while retrying,
// then stopped). It is a no-op once the session has ended.
func (s *Session) RequestStop(timeout time.Duration) error {
	select {
	case <-s.stopped:
		return nil
	default:
	}
	m := message{Type: wire.MsgStop}
	if timeout > 0 {
		d := wire.Duration(timeout)
		m.Timeout = &d
	}
	return s.write(m)
}

// Renew tells the guardian that its tree must now be dead by deadline
// (a time on this process's monotonic clock), unless renewed again: the
// lease of the agent's identity was renewed. It is a no-op once the
// session has ended, and an error when the deadline has passed: then the
// guardian is stopping the tree already.
func (s *Session) Renew(deadline time.Time) error {
	select {
	case <-s.stopped:
		return nil
	default:
	}
	d := wire.Duration(time.Until(deadline))
	if d <= 0 {
		return fmt.Errorf("the lease's deadline passed %v ago", -time.Duration(d))
	}
	return s.write(message{Type: wire.MsgDeadline, Deadline: &d})
}

// Err returns the outcome of the latest report that carries one: a
// cleanup failure stays here, through any number of retries, until a
// newer outcome (a clean stop, or a different failure) replaces it. An
// agent's exit is not an outcome and replaces nothing.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Close drops the owner's end of the tether, which the guardian takes as
// its owner's death: it tears the tree down. Close does not wait; use
// Done or Events for that.
func (s *Session) Close() error {
	return s.conn.Close()
}

func (s *Session) write(m message) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	// Clear it after: an armed deadline is a timer that wakes the
	// process later for nothing.
	defer s.conn.SetWriteDeadline(time.Time{})
	return writeMessage(s.conn, m)
}

// newSession is a session on conn, read by rd, with the guardian proc.
func newSession(spec Spec, conn tetherConn, rd *lineReader, proc guardianProcess) *Session {
	return &Session{
		spec: spec, conn: conn, rd: rd, proc: proc,
		version:  wire.Version,
		events:   make(chan Event, eventBuffer),
		stopped:  make(chan struct{}),
		done:     make(chan struct{}),
		park:     make(chan chan []byte, 1),
		unpark:   make(chan bool),
		attached: make(chan struct{}),
	}
}

// run reads the guardian's reports until EOF, then reaps the guardian and
// closes the event stream. Parked by Detach, it stops reading until
// Resume, or returns at once after Release, leaving the tether and the
// guardian to the next owner.
func (s *Session) run() {
	var final *Event
	defer s.markAttached()
	for {
		m, err := s.rd.next()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && s.parkFlag.Load() {
				if !s.parkHere() {
					return // released: the next owner has it all
				}
				continue
			}
			break
		}
		ev := Event{Time: m.Time, Reason: m.Reason, Exit: m.Exit, Cleanup: m.Cleanup}
		switch m.Type {
		case wire.MsgExited:
			ev.Type = EventExited
		case wire.MsgCleanupFailed:
			ev.Type = EventCleanupFailed
			ev.Err = CleanupErr(m.Cleanup)
			if ev.Err == nil {
				ev.Err = &CleanupError{Code: wire.CleanupInternal, Message: "cleanup_failed without a cause"}
			}
		case wire.MsgStopped:
			ev.Type = EventStopped
			ev.Err = CleanupErr(m.Cleanup)
			ev.Detail = m.Detail
		case wire.MsgAgentReady, wire.MsgStatus, wire.MsgAttached:
			ev.Type = EventAgentReady
			switch m.Type {
			case wire.MsgStatus:
				ev.Type = EventStatus
			case wire.MsgAttached:
				ev.Type, ev.Ready = EventAttached, m.Ready
				s.markAttached()
			}
			ev.Status, ev.MainPID = m.Detail, m.MainPID
			s.events <- ev
			continue
		default:
			continue
		}
		if ev.Type != EventExited {
			s.setErr(ev.Err)
		}
		if ev.Type == EventStopped {
			final = &ev
			s.finish(final)
		}
		s.events <- ev
	}
	defer close(s.done)
	defer close(s.events)
	s.conn.Close()
	werr := s.proc.Wait()
	if final == nil {
		ev := Event{Type: EventLost, Time: time.Now().UTC(), Err: fmt.Errorf("guardian pid %d for %q: %w (%v)", s.proc.Pid(), s.spec.Identity, ErrGuardianLost, werr)}
		s.setErr(ev.Err)
		s.finish(&ev)
		s.events <- ev
	}
}

func (s *Session) markAttached() { s.attachOK.Do(func() { close(s.attached) }) }

func (s *Session) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
}

func (s *Session) finish(ev *Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.final == nil {
		s.final = ev
		close(s.stopped)
	}
}

// handshake reads the guardian's first answer.
func handshake(ctx context.Context, conn tetherConn, rd *lineReader, timeout time.Duration) (message, error) {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	m, err := rd.next()
	if err != nil {
		if ctx.Err() != nil {
			return m, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return m, errors.New("guardian exited before answering")
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return m, fmt.Errorf("no answer within %v", timeout)
		}
		return m, err
	}
	_ = conn.SetReadDeadline(time.Time{})
	if !versionOK(m.Version) {
		return m, fmt.Errorf("guardian speaks protocol version %d; this tether speaks %d", m.Version, wire.Version)
	}
	return m, nil
}
