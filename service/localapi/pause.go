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
)

// Pause stops accepting connections without closing the listener:
// clients that connect meanwhile wait in its backlog (a unix socket's
// listen queue), none is refused. Every event stream ends, with a
// handover event first when handover is set (the client reconnects), and
// Pause waits for the requests in progress until ctx is done. Then the
// listener is the next owner's, or Resume serves it again; Serve does not
// return meanwhile. On ctx's end the requests still in progress go on and
// Pause returns ctx's error: call Resume.
func (s *Server) Pause(ctx context.Context, handover bool) error {
	if _, ok := s.l.(deadliner); !ok {
		return fmt.Errorf("the %T listener cannot stop accepting without closing", s.l)
	}
	s.mu.Lock()
	select {
	case <-s.final:
		s.mu.Unlock()
		return errors.New("the server is shutting down")
	default:
	}
	hs := s.hs
	s.pausing, s.resumed = true, make(chan struct{})
	s.handingOver.Store(handover)
	s.mu.Unlock()
	err := hs.Shutdown(ctx)
	// Accept was woken by a deadline in the past; the listener itself
	// stays as it was.
	_ = s.l.(deadliner).SetDeadline(time.Time{})
	return err
}

// Resume serves the listener again after a Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pausing {
		return
	}
	s.hs = s.newHTTPServer()
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

// pausable wraps l so that the HTTP server's Close of it (at Shutdown,
// also at a Pause) only wakes its Accept, with a deadline in the past,
// and leaves the listener open: closing is Server.Shutdown's, and the
// handover's.
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
	ans, err := s.b.Upgrade(r.Context(), req)
	if err != nil {
		writeBackendError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}
