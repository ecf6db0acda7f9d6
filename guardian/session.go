package guardian

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event is one report from a running session.
type Event struct {
	Type    EventType
	Time    time.Time
	Reason  StopReason
	Exit    *Exit    // EventExited, and EventStopped when known
	Cleanup *Cleanup // EventStopped and EventCleanupFailed
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
	// (EventStatus), zero when it named none.
	MainPID int
}

// Session is the owner's handle on one running guardian.
type Session struct {
	spec  Spec
	ready Ready
	conn  *os.File
	proc  guardianProcess

	events  chan Event
	stopped chan struct{} // closed when stopped arrives or the guardian is gone
	done    chan struct{} // closed once the guardian has been reaped

	mu      sync.Mutex
	final   *Event // the stopped or lost event
	lastErr error  // the outcome of the latest cleanup_failed, stopped or lost
	writeMu sync.Mutex
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

// Ready returns what the guardian reported when the agent started.
func (s *Session) Ready() Ready { return s.ready }

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
	m := message{Type: msgStop}
	if timeout > 0 {
		d := Duration(timeout)
		m.Timeout = &d
	}
	return s.write(m)
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

// run reads the guardian's reports until EOF, then reaps the guardian and
// closes the event stream.
func (s *Session) run(rd *lineReader) {
	defer close(s.done)
	defer close(s.events)
	var final *Event
	for {
		m, err := rd.next()
		if err != nil {
			break
		}
		ev := Event{Time: m.Time, Reason: m.Reason, Exit: m.Exit, Cleanup: m.Cleanup}
		switch m.Type {
		case msgExited:
			ev.Type = EventExited
		case msgCleanupFailed:
			ev.Type = EventCleanupFailed
			ev.Err = m.Cleanup.Err()
			if ev.Err == nil {
				ev.Err = &CleanupError{Code: CleanupInternal, Message: "cleanup_failed without a cause"}
			}
		case msgStopped:
			ev.Type = EventStopped
			ev.Err = m.Cleanup.Err()
			ev.Detail = m.Detail
		case msgAgentReady, msgStatus:
			ev.Type = EventAgentReady
			if m.Type == msgStatus {
				ev.Type = EventStatus
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
	s.conn.Close()
	werr := s.proc.Wait()
	if final == nil {
		ev := Event{Type: EventLost, Time: time.Now().UTC(), Err: fmt.Errorf("guardian pid %d for %q: %w (%v)", s.proc.Pid(), s.spec.Identity, ErrGuardianLost, werr)}
		s.setErr(ev.Err)
		s.finish(&ev)
		s.events <- ev
	}
}

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
func handshake(ctx context.Context, conn *os.File, rd *lineReader, timeout time.Duration) (message, error) {
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
	if m.Version != ProtocolVersion {
		return m, fmt.Errorf("guardian speaks protocol version %d, want %d", m.Version, ProtocolVersion)
	}
	return m, nil
}
