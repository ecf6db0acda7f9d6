package guardian

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// adoptAnswerWait bounds the first line on an adopt socket, each way: a
// client that connects and says nothing must not hold the guardian's
// attention.
const adoptAnswerWait = 5 * time.Second

// ErrNotWaiting: nobody waits at the adopt socket (no guardian of that
// identity is waiting to be adopted).
var ErrNotWaiting = errors.New("no guardian waits to be adopted there")

// AdoptError is a waiting guardian's refusal of an adoption (another
// profile's), or an answer that was not one.
type AdoptError struct {
	Identity string
	Message  string
}

func (e *AdoptError) Error() string {
	return fmt.Sprintf("adopting the guardian of %q: %s", e.Identity, e.Message)
}

// adoption is a new owner that passed the checks: its connection, the
// reader of it (which may hold more than the attach) and its attach.
type adoption struct {
	conn   net.Conn
	rd     *lineReader
	attach message
}

// adoptListener is a waiting guardian's adopt socket (a named pipe on
// Windows): user-only, and every caller's user checked again (I5).
type adoptListener struct {
	l       net.Listener
	info    wire.Waiting
	profile string
	self    string
	found   chan adoption // the first adoption that passed the checks
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
	logf    func(string, ...any)
}

// listenAdopt opens the adopt socket at path and serves it until close.
func listenAdopt(path string, info wire.Waiting, logf func(string, ...any)) (*adoptListener, error) {
	self, err := platform.CurrentUser()
	if err != nil {
		return nil, err
	}
	l, err := platform.Listen(path)
	if err != nil {
		return nil, err
	}
	a := &adoptListener{l: l, info: info, profile: info.Profile, self: self,
		found: make(chan adoption, 1), stop: make(chan struct{}), logf: logf}
	a.wg.Add(1)
	go a.serve()
	return a, nil
}

func (a *adoptListener) serve() {
	defer a.wg.Done()
	for {
		c, err := a.l.Accept()
		if err != nil {
			select {
			case <-a.stop:
			default:
				a.logf("adopt socket: %v", err)
			}
			return
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.handle(c)
		}()
	}
}

// handle answers one caller: a query with waiting, an attach of the
// right profile by handing the connection to the guardian, anything else
// by closing it.
func (a *adoptListener) handle(c net.Conn) {
	keep := false
	defer func() {
		if !keep {
			c.Close()
		}
	}()
	p, err := platform.PeerOf(c)
	if err != nil || p.User != a.self {
		a.logf("adopt socket: refused a caller (%s %s, pid %d): %v", platform.UserKind, p.User, p.PID, err)
		return
	}
	_ = c.SetDeadline(time.Now().Add(adoptAnswerWait))
	rd := newLineReader(c)
	m, err := rd.next()
	if err != nil {
		return
	}
	refuse := func(msg string) {
		a.logf("adopt socket: refused pid %d: %s", p.PID, msg)
		_ = writeMessage(c, message{Type: wire.MsgFailed, Version: wire.Version, Failure: &wire.Failure{Code: wire.CodeContention, Message: msg}})
	}
	switch {
	case m.Type == wire.MsgQuery:
		info := a.info
		_ = writeMessage(c, message{Type: wire.MsgWaiting, Version: wire.Version, Waiting: &info})
	case m.Type != wire.MsgAttach:
		refuse(fmt.Sprintf("first message is %q, want %q or %q", m.Type, wire.MsgAttach, wire.MsgQuery))
	case !versionOK(m.Version):
		refuse(fmt.Sprintf("protocol version %d; this guardian speaks %d", m.Version, wire.Version))
	case m.Profile != a.profile:
		refuse(fmt.Sprintf("the tree belongs to profile %q, not %q", a.profile, m.Profile))
	default:
		_ = c.SetDeadline(time.Time{})
		select {
		case a.found <- adoption{conn: c, rd: rd, attach: m}:
			keep = true
		case <-a.stop:
		default:
			refuse("another owner is adopting it")
		}
	}
}

// close stops serving and removes the socket. An adoption already found
// is the caller's.
func (a *adoptListener) close() {
	a.once.Do(func() {
		close(a.stop)
		a.l.Close()
	})
	a.wg.Wait()
}

// Adopt takes over the tree of a guardian waiting at path to be adopted
// (its owner died and it had survive_crash): it checks the guardian's
// user (the server's, as the API client does), sends attach with this
// process as owner and profile, and returns the Session once the
// guardian answered attached. Nobody waiting there is ErrNotWaiting; a
// refusal (another profile's tree) is an *AdoptError.
func Adopt(ctx context.Context, spec Spec, path string) (*Session, error) {
	c, rd, err := dialWaiting(ctx, path)
	if err != nil {
		return nil, err
	}
	self := platform.Self()
	if err := writeMessage(c, message{Type: wire.MsgAttach, Version: wire.Version, Owner: &self, Profile: spec.Profile}); err != nil {
		c.Close()
		return nil, fmt.Errorf("adopting the guardian of %q: %w", spec.Identity, err)
	}
	m, err := rd.next()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("adopting the guardian of %q: no answer: %w", spec.Identity, err)
	}
	switch {
	case m.Type == wire.MsgFailed && m.Failure != nil:
		c.Close()
		return nil, &AdoptError{Identity: spec.Identity, Message: m.Failure.Message}
	case m.Type != wire.MsgAttached || m.Ready == nil || !versionOK(m.Version):
		c.Close()
		return nil, &AdoptError{Identity: spec.Identity, Message: fmt.Sprintf("unexpected answer %q (version %d)", m.Type, m.Version)}
	}
	_ = c.SetDeadline(time.Time{})
	r := *m.Ready
	s := newSession(spec, c, rd, WatchedProcess(platform.Ref{Pid: r.GuardianPID, Start: r.GuardianStart}))
	s.ready, s.version = r, m.Version
	s.markAttached()
	s.events <- Event{Type: EventAttached, Time: m.Time, Ready: &r, Status: m.Detail, MainPID: m.MainPID}
	go s.run()
	return s, nil
}

// QueryWaiting asks the guardian waiting at path who it is.
func QueryWaiting(ctx context.Context, path string) (wire.Waiting, error) {
	c, _, err := dialWaiting(ctx, path)
	if err != nil {
		return wire.Waiting{}, err
	}
	defer c.Close()
	w, err := wire.Query(c)
	if err != nil {
		return wire.Waiting{}, fmt.Errorf("asking the guardian at %s: %w", path, err)
	}
	return w, nil
}

// dialWaiting connects to an adopt socket, bounded by ctx and
// adoptAnswerWait, and checks that a process of this user serves it.
func dialWaiting(ctx context.Context, path string) (net.Conn, *lineReader, error) {
	ctx, cancel := context.WithTimeout(ctx, adoptAnswerWait)
	defer cancel()
	c, err := platform.Dial(ctx, path)
	if errors.Is(err, platform.ErrNoListener) || errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotWaiting, err)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := checkServerUser(c); err != nil {
		c.Close()
		return nil, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	return c, newLineReader(c), nil
}

// checkServerUser refuses an adopt socket served by another user (on
// Unix the socket's directory is the user's, 0700, so this only fails
// when something is badly wrong; on Windows the client checks the pipe's
// owner as it dials).
func checkServerUser(c net.Conn) error {
	p, err := platform.PeerOf(c)
	if err != nil {
		return nil // a client end cannot always tell (Windows); Dial checked
	}
	self, err := platform.CurrentUser()
	if err != nil {
		return err
	}
	if p.User != self {
		return fmt.Errorf("the adopt socket is served by %s %s, not this user", platform.UserKind, p.User)
	}
	return nil
}
