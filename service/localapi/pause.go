package localapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// Pause stops accepting connections without closing the listener:
// clients that connect meanwhile wait in its backlog (a unix socket's
// listen queue), none is refused. Every event stream ends, with a
// handover event first when handover is set (the client reconnects), and
// Pause waits until every connection accepted before has been answered
// and closed, until ctx is done. Then the listener is the next owner's,
// or Resume serves it again; Serve does not return meanwhile. On ctx's
// end the requests still in progress go on and Pause returns ctx's
// error: call Resume.
//
// It is not http.Server.Shutdown, which drops a connection whose request
// it reads after the shutdown began: here that request is answered.
func (s *Server) Pause(ctx context.Context, handover bool) error {
	d, ok := s.l.(deadliner)
	if !ok {
		return fmt.Errorf("the %T listener cannot stop accepting without closing", s.l)
	}
	s.mu.Lock()
	select {
	case <-s.final:
		s.mu.Unlock()
		return errors.New("the server is shutting down")
	default:
	}
	g := s.gen
	s.pausing, s.resumed = true, make(chan struct{})
	s.handingOver.Store(handover)
	s.mu.Unlock()
	// Every answer from now on closes its connection. Nothing more is
	// accepted before the streams end: a client that reconnects on its
	// handover event waits in the backlog for the next owner.
	g.hs.SetKeepAlivesEnabled(false)
	_ = g.ln.Close()
	g.endStreams()
	defer func() { _ = d.SetDeadline(time.Time{}) }()
	select {
	case <-g.served:
	case <-ctx.Done():
		return ctx.Err()
	}
	// A connection that has sent nothing for stalledAfter (a client
	// stopped with Ctrl-Z before or halfway through its request, or one
	// that connected and said nothing) is closed: the pause waits only
	// for the requests it has, and for a client that has just connected.
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	for {
		next, quiet := g.quiet(time.Now())
		if quiet {
			return nil
		}
		if !next.IsZero() {
			wake.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.changed:
		case <-wake.C:
		}
	}
}

// stalledAfter is how long a connection may go without a whole request,
// and with nothing unread, before a pause closes it.
const stalledAfter = 200 * time.Millisecond

// quiet closes the idle connections of the generation, and those that
// have been stalled for stalledAfter at now, and reports whether none is
// left, or else when the next of those left will have been (zero: none).
// A connection is stalled when its request is not whole (http's
// StateNew: the server is still reading it) and nothing of it waits to
// be read; one whose bytes wait is the server's to read, however late.
// Where the OS does not say what waits (platform.Unread), none is.
func (g *generation) quiet(now time.Time) (next time.Time, quiet bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c, st := range g.conns {
		if st == http.StateIdle {
			c.Close()
			delete(g.conns, c)
			continue
		}
		if st != http.StateNew {
			continue
		}
		if n, ok := platform.Unread(c); !ok || n > 0 {
			continue
		}
		if due := g.since[c].Add(stalledAfter); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		c.Close()
		delete(g.conns, c)
	}
	return next, len(g.conns) == 0
}

// ErrHandingOver answers a request that the service cannot take while it
// hands over to another binary: the client asks again of the successor.
var ErrHandingOver = &api.Error{Code: api.CodeHandingOver,
	Message: "the service is handing over to another binary: ask again once it answers"}

// CloseAfterAnswer makes every answer close its connection, for a
// server that answers once per connection (an upgrade's stand-in). Call
// it before Serve.
func (s *Server) CloseAfterAnswer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen.hs.SetKeepAlivesEnabled(false)
}

// Resume serves the listener again after a Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pausing {
		return
	}
	s.gen = s.newGeneration()
	s.pausing = false
	s.handingOver.Store(false)
	close(s.resumed)
}

// Listener returns the listener the server serves, for its handover.
func (s *Server) Listener() net.Listener { return s.l }

// deadliner is a listener whose Accept a deadline wakes (a unix socket's).
type deadliner interface {
	SetDeadline(time.Time) error
}

// pausable wraps l so that the HTTP server's Close of it (at Shutdown)
// or a Pause's only wakes its Accept, with a deadline in the past, and
// leaves the listener open: closing it is Server.Shutdown's, or the next
// owner's after a handover.
func pausable(l net.Listener) net.Listener {
	if _, ok := l.(deadliner); !ok {
		return l
	}
	return &pauseListener{Listener: l, done: make(chan struct{})}
}

type pauseListener struct {
	net.Listener
	done chan struct{}
	once sync.Once
}

func (p *pauseListener) Accept() (net.Conn, error) {
	c, err := p.Listener.Accept()
	if err != nil {
		select {
		case <-p.done:
			return nil, net.ErrClosed
		default:
		}
	}
	return c, err
}

func (p *pauseListener) Close() error {
	p.once.Do(func() {
		close(p.done)
		_ = p.Listener.(deadliner).SetDeadline(time.Unix(1, 0))
	})
	return nil
}

func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	var req api.UpgradeRequest
	if !decodeBody(w, r, &req, true) {
		return
	}
	// A pause that begins while this upgrade waits for the one under way
	// must not wait for it in turn: the request ends, saying so, and the
	// client asks the successor.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	closing, _ := r.Context().Value(closingKey{}).(chan struct{})
	go func() {
		select {
		case <-closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	ans, err := s.b.Upgrade(ctx, req)
	if err != nil {
		if errors.Is(err, context.Canceled) && r.Context().Err() == nil {
			writeError(w, http.StatusServiceUnavailable, ErrHandingOver)
			return
		}
		writeBackendError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}
