// Package localapi serves the local API (package api's paths and types) as
// HTTP+JSON over the user-only socket or named pipe that platform.Listen
// opens. It decides who may call (the service's own user, never a browser)
// and what a well-formed request is; everything an agent is or does
// belongs to the Backend, the service's controller. It owns no agent and
// starts no process. Only the service imports it.
//
// Answers: 200 with the JSON value on success; otherwise an api.Error
// body, with 400 (bad_request: bad JSON, unknown fields, bad parameters),
// 413 (bad_request: a body over api.MaxBody), 403 (forbidden: another user,
// a browser, a foreign Host), 404 (not_found: unknown path or id), 405
// (bad_request: wrong method), 409 (contention), 422 (config), or 500 for
// any other code. Start, stop and restart take several ids and answer 200
// whenever the request itself was well-formed, with one api.Result per id,
// in the order given: a failure of one id (not_found, spawn, contention...)
// is that Result's error, and the HTTP status says nothing about it.
package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// Backend is what the API serves: the service's controller. Its methods
// are called concurrently, from one goroutine per request.
type Backend interface {
	Status() api.Status
	// StatusWithUsage is Status with each agent's Usage, measured for
	// the request (GET status?usage=1).
	StatusWithUsage() api.Status
	// Start, Stop and Restart act on one agent. ctx is the request's: it
	// is done when the client goes away. An unknown id should be an
	// *api.Error with code not_found (the server also checks ids against
	// Status first). The returned row is reported even with an error
	// when its ID is set.
	// Start and Restart answer once the agent is ready (I8), or once it
	// is spawned when noWait is set.
	Start(ctx context.Context, id string, noWait bool) (api.Agent, error)
	Stop(ctx context.Context, id string) (api.Agent, error)
	Restart(ctx context.Context, id string, noWait bool) (api.Agent, error)
	Reload(ctx context.Context) (api.Reloaded, error)
	Logs(id string, n int) ([]string, error)
	// Subscribe returns agent events (api.EventAgent) and, for the ids in
	// logs, log lines (api.EventLog), until cancel is called. The backend
	// may close the channel to end the stream (a reader too far behind);
	// after cancel the server no longer reads it. cancel is called
	// exactly once.
	// tail asks for that many lines already in each log before the
	// stream follows it from the same point, so no line is lost or
	// repeated between the two.
	Subscribe(logs []string, tail int) (events <-chan api.Event, cancel func())
	// Quit stops every agent and makes the service exit. It may refuse
	// (an agent's stop could not be confirmed) with an *api.Error; the
	// server answers the request once Quit returns, so Quit must not wait
	// for Server.Shutdown, which waits for the request.
	Quit(ctx context.Context) error
	// Upgrade checks the binary req names and answers once the handover
	// to it has begun, or why it will not be made (an *api.Error, code
	// upgrade). Like Quit, it must not wait for Pause, which waits for
	// the request.
	Upgrade(ctx context.Context, req api.UpgradeRequest) (api.UpgradeAnswer, error)
}

// Limits of the HTTP server. There is no WriteTimeout, which would cut
// the event stream; each line of the stream has its own write deadline.
const (
	readHeaderTimeout  = 10 * time.Second
	idleTimeout        = 60 * time.Second
	maxHeaderBytes     = 64 << 10
	streamWriteTimeout = 10 * time.Second
	defaultLogLines    = 100
	maxLogLines        = 10000
)

// Server serves the local API on one listener.
type Server struct {
	b Backend
	l net.Listener

	mu  sync.Mutex
	gen *generation // the HTTP server serving now: a new one after Resume
	// pausing makes Serve wait for Resume or Shutdown instead of
	// returning; handingOver makes event streams end with a handover
	// event.
	pausing     bool
	handingOver atomic.Bool
	resumed     chan struct{}
	final       chan struct{} // closed by Shutdown

	// self is the only user let in, the service's own: its uid on
	// Unix, its SID on Windows. selfErr says why it is unknown.
	self    string
	selfErr error
	// peerOf tells who opened a connection; tests replace it to play a
	// caller of another user, which Wine cannot produce.
	peerOf func(net.Conn) peer

	routes map[string]route

	answered     chan struct{} // closed once the first request is answered
	answeredOnce sync.Once
}

type route struct {
	method string
	h      func(http.ResponseWriter, *http.Request)
}

// New returns a server of b on l, a listener of platform.Listen. It
// serves nothing until Serve.
func New(b Backend, l net.Listener) *Server {
	s := &Server{b: b, l: l, peerOf: peerOf, final: make(chan struct{}), answered: make(chan struct{})}
	s.self, s.selfErr = platform.CurrentUser()
	s.routes = map[string]route{
		api.PathStatus:  {http.MethodGet, s.status},
		api.PathEvents:  {http.MethodGet, s.events},
		api.PathStart:   {http.MethodPost, s.action(b.Start)},
		api.PathStop:    {http.MethodPost, s.action(waitless(b.Stop))},
		api.PathRestart: {http.MethodPost, s.action(b.Restart)},
		api.PathLogs:    {http.MethodGet, s.logs},
		api.PathReload:  {http.MethodPost, s.reload},
		api.PathQuit:    {http.MethodPost, s.quit},
		api.PathUpgrade: {http.MethodPost, s.upgrade},
	}
	s.gen = s.newGeneration()
	return s
}

// generation is one HTTP server on the listener: the first, or the one
// a Resume makes.
type generation struct {
	hs      *http.Server
	ln      net.Listener  // the listener as hs serves it (see pausable)
	closing chan struct{} // closed when Shutdown or Pause begins: ends event streams
	once    sync.Once
	served  chan struct{} // closed when hs.Serve has returned

	mu    sync.Mutex
	conns map[net.Conn]http.ConnState
	// since is when each connection entered its state.
	since map[net.Conn]time.Time
	// changed has a token when a connection changed state since a
	// Pause last looked: it waits on it, not on a clock.
	changed chan struct{}
}

func (s *Server) newGeneration() *generation {
	g := &generation{ln: pausable(s.l), closing: make(chan struct{}), served: make(chan struct{}),
		conns: map[net.Conn]http.ConnState{}, since: map[net.Conn]time.Time{}, changed: make(chan struct{}, 1)}
	g.hs = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// Who is calling is a property of the connection, read once
		// from the system when it is accepted (SO_PEERCRED,
		// LOCAL_PEERCRED, the token a pipe client presents);
		// ServeHTTP checks it on every request.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			ctx = context.WithValue(ctx, closingKey{}, g.closing)
			return context.WithValue(ctx, peerKey{}, s.peerOf(c))
		},
		ConnState: g.track,
	}
	// http.Server.Shutdown waits for handlers to return, and the event
	// stream's never would on its own.
	g.hs.RegisterOnShutdown(g.endStreams)
	return g
}

func (g *generation) endStreams() { g.once.Do(func() { close(g.closing) }) }

// track keeps the connections of the generation, for a Pause to wait
// for.
func (g *generation) track(c net.Conn, st http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st == http.StateClosed || st == http.StateHijacked {
		delete(g.conns, c)
		delete(g.since, c)
	} else {
		g.conns[c] = st
		g.since[c] = time.Now()
	}
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

type closingKey struct{}

// Serve serves until Shutdown and then returns nil; it returns any other
// error that stops it. A Pause does not end it: it serves again after
// Resume. It closes the listener, which removes the socket file or the
// pipe. Call it once.
func (s *Server) Serve() error {
	for {
		s.mu.Lock()
		g := s.gen
		s.mu.Unlock()
		err := g.hs.Serve(g.ln)
		close(g.served)
		s.mu.Lock()
		pausing, resumed := s.pausing, s.resumed
		s.mu.Unlock()
		if pausing {
			select {
			case <-resumed:
				continue
			case <-s.final:
				return nil
			}
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// Shutdown stops accepting connections, ends every event stream, and waits
// for the requests in progress until ctx is done; then it closes the
// connections left and returns ctx's error. It closes the listener even if
// Serve was never called.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	hs := s.gen.hs
	select {
	case <-s.final:
	default:
		close(s.final)
	}
	s.mu.Unlock()
	err := hs.Shutdown(ctx)
	if err != nil {
		_ = hs.Close()
	}
	// A second close is harmless: a unix listener unlinks its path
	// once, and a pipe listener closes once.
	_ = s.l.Close()
	return err
}

// peer is who is at the other end of a connection.
type peer struct {
	user string // as self: a uid on Unix, a SID on Windows
	pid  int
	err  error
}

// peerOf returns who opened c (platform.PeerOf). The pipe's security
// descriptor on Windows already keeps other users from opening it; this
// check holds even where the descriptor is not enforced (Wine stores it
// but does not check it).
func peerOf(c net.Conn) peer {
	p, err := platform.PeerOf(c)
	return peer{user: p.User, pid: p.PID, err: err}
}

type peerKey struct{}

// ServeHTTP checks who is calling before anything else, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if msg := s.refusal(r); msg != "" {
		writeError(w, http.StatusForbidden, &api.Error{Code: api.CodeForbidden, Message: msg})
		return
	}
	rt, ok := s.routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no endpoint %s", r.URL.Path)})
		return
	}
	if r.Method != rt.method {
		w.Header().Set("Allow", rt.method)
		writeError(w, http.StatusMethodNotAllowed, &api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("%s takes %s, not %s", r.URL.Path, rt.method, r.Method)})
		return
	}
	rt.h(w, r)
	s.answeredOnce.Do(func() { close(s.answered) })
}

// Answered is closed once the server has answered its first request (an
// event stream's answer is its end).
func (s *Server) Answered() <-chan struct{} { return s.answered }

// refusal says why r may not be served, or "" when it may.
func (s *Server) refusal(r *http.Request) string {
	p, ok := r.Context().Value(peerKey{}).(peer)
	switch {
	case !ok:
		return "cannot tell who is calling"
	case p.err != nil:
		return fmt.Sprintf("cannot tell who is calling: %v", p.err)
	case s.selfErr != nil:
		return fmt.Sprintf("cannot tell which user the service runs as: %v", s.selfErr)
	case p.user != s.self:
		return fmt.Sprintf("%s %s (pid %d) may not use the service of %s %s", platform.UserKind, p.user, p.pid, platform.UserKind, s.self)
	}
	// A browser page can be made to send requests to local servers (and
	// something on this machine could relay them to the socket); every
	// browser marks them with Origin or Sec-Fetch-Site. Our clients
	// send neither, and name api.Host.
	if _, ok := r.Header["Origin"]; ok {
		return "requests from a browser (Origin) are refused"
	}
	if v, ok := r.Header["Sec-Fetch-Site"]; ok && (len(v) != 1 || v[0] != "none") {
		return "requests from a browser (Sec-Fetch-Site) are refused"
	}
	if r.Host != "" && r.Host != api.Host {
		return fmt.Sprintf("host %q is refused: the local API answers to %q only", r.Host, api.Host)
	}
	return ""
}

// EncodedStatus is a Backend whose status is encoded already: the
// server answers a status with StatusBody as it is.
type EncodedStatus interface {
	StatusBody() []byte
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	switch v := r.URL.Query().Get(api.QueryUsage); v {
	case "", "0":
		if e, ok := s.b.(EncodedStatus); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(e.StatusBody())
			return
		}
		writeJSON(w, http.StatusOK, s.b.Status())
	case "1":
		writeJSON(w, http.StatusOK, s.b.StatusWithUsage())
	default:
		writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest,
			Message: fmt.Sprintf("status: %s=%q: must be 0 or 1", api.QueryUsage, v)})
	}
}

// waitless adapts an action that has nothing to wait for (stop).
func waitless(do func(context.Context, string) (api.Agent, error)) func(context.Context, string, bool) (api.Agent, error) {
	return func(ctx context.Context, id string, _ bool) (api.Agent, error) { return do(ctx, id) }
}

// action serves start, stop or restart: one Result per id, in order, the
// ids acted on concurrently (stopping several agents takes the longest
// stop timeout, not their sum).
func (s *Server) action(do func(context.Context, string, bool) (api.Agent, error)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		var req api.IDsRequest
		if !decodeBody(w, r, &req, false) {
			return
		}
		if len(req.IDs) == 0 {
			writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest, Message: "no ids given"})
			return
		}
		known := s.known()
		res := api.Results{Results: make([]api.Result, len(req.IDs))}
		var wg sync.WaitGroup
		for i, id := range req.IDs {
			res.Results[i].ID = id
			if !known[id] {
				res.Results[i].Error = notFound(id)
				continue
			}
			wg.Go(func() {
				a, err := do(r.Context(), id, req.NoWait)
				if err != nil {
					res.Results[i].Error = toAPIError(err)
				}
				if err == nil || a.ID != "" {
					res.Results[i].Agent = &a
				}
			})
		}
		wg.Wait()
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest, Message: "logs: the id parameter is required"})
		return
	}
	n := defaultLogLines
	if v := q.Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > maxLogLines {
			writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest,
				Message: fmt.Sprintf("logs: n=%q: must be a number from 1 to %d", v, maxLogLines)})
			return
		}
	}
	if !s.known()[id] {
		writeError(w, http.StatusNotFound, notFound(id))
		return
	}
	lines, err := s.b.Logs(id, n)
	if err != nil {
		writeBackendError(w, err)
		return
	}
	if lines == nil {
		lines = []string{}
	}
	writeJSON(w, http.StatusOK, api.Logs{ID: id, Lines: lines})
}

func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	if !decodeBody(w, r, &struct{}{}, true) {
		return
	}
	done, err := s.b.Reload(r.Context())
	if err != nil {
		writeBackendError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, done)
}

func (s *Server) quit(w http.ResponseWriter, r *http.Request) {
	if !decodeBody(w, r, &struct{}{}, true) {
		return
	}
	if err := s.b.Quit(r.Context()); err != nil {
		writeBackendError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// events streams newline-delimited JSON: a hello with the whole status,
// then what the backend publishes, each line flushed as it is written. It
// ends when the client goes away, when the backend closes the stream, when
// a line cannot be written within streamWriteTimeout (a client that stopped
// reading), or when the server shuts down.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	var logs []string
	if v := r.URL.Query().Get("logs"); v != "" {
		known := s.known()
		for id := range strings.SplitSeq(v, ",") {
			if id == "" {
				continue
			}
			if !known[id] {
				writeError(w, http.StatusNotFound, notFound(id))
				return
			}
			logs = append(logs, id)
		}
	}
	tail := 0
	if v := r.URL.Query().Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxLogLines {
			writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("n %q: want a number from 0 to %d", v, maxLogLines)})
			return
		}
		tail = n
	}
	closing, _ := r.Context().Value(closingKey{}).(chan struct{})

	rc := http.NewResponseController(w)
	// Each line gets a fresh write deadline, and so does the end of the
	// response, written after this handler returns. The deadline would
	// outlive the request on a reused connection: the stream's is never
	// reused.
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) }()
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(ev api.Event) bool {
		if ev.Time.IsZero() {
			ev.Time = time.Now().UTC()
		}
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		return enc.Encode(ev) == nil && rc.Flush() == nil
	}
	// The stream's end: where to go on, when the service hands over.
	end := func() {
		if s.handingOver.Load() {
			send(api.Event{Type: api.EventHandover})
		}
	}
	// A stream accepted just before a pause ended the streams has
	// nothing to tell but where to go on: a hello from a service about
	// to hand over would only come twice, its successor's after it. Nor
	// is the status read for it, in the pause.
	select {
	case <-closing:
		end()
		return
	default:
	}
	// Subscribe before reading the status: a change made in between is
	// then sent after the hello (again, which is harmless: an agent event
	// is the whole row) rather than lost.
	ch, cancel := s.b.Subscribe(logs, tail)
	defer cancel()
	st := s.b.Status()
	if !send(api.Event{Type: api.EventHello, Status: &st}) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-closing:
			end()
			return
		case ev, ok := <-ch:
			if !ok || !send(ev) {
				return
			}
		}
	}
}

// known returns the ids of the agents the backend has.
func (s *Server) known() map[string]bool {
	st := s.b.Status()
	m := make(map[string]bool, len(st.Agents))
	for _, a := range st.Agents {
		m[a.ID] = true
	}
	return m
}

func notFound(id string) *api.Error {
	return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no agent %q", id)}
}

// decodeBody reads r's JSON body into v: at most api.MaxBody bytes, one
// JSON value, no field v does not have. An empty body is accepted when
// optional. It answers the request itself and returns false on failure.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	// Even with a Content-Length over the limit, read up to it: hitting
	// the MaxBytesReader's limit makes net/http half-close the connection
	// and linger before closing it, so a client still sending its body
	// reads the 413 rather than a broken pipe.
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, &api.Error{Code: api.CodeBadRequest,
				Message: fmt.Sprintf("the request body is larger than %d bytes", api.MaxBody)})
		} else {
			writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest, Message: "reading the request body: " + err.Error()})
		}
		return false
	}
	if optional && len(bytes.TrimSpace(b)) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("more data after the JSON value")
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, &api.Error{Code: api.CodeBadRequest, Message: "bad JSON in the request body: " + err.Error()})
		return false
	}
	return true
}

// toAPIError types a backend error: its own *api.Error code when it has
// one, internal otherwise.
func toAPIError(err error) *api.Error {
	ae, ok := errors.AsType[*api.Error](err)
	switch {
	case !ok:
		return &api.Error{Code: api.CodeInternal, Message: err.Error()}
	case ae == nil:
		return &api.Error{Code: api.CodeInternal, Message: "the backend returned a nil *api.Error"}
	case error(ae) == err:
		return ae
	default:
		// Keep the context the backend wrapped around it.
		return &api.Error{Code: ae.Code, Message: err.Error()}
	}
}

func writeBackendError(w http.ResponseWriter, err error) {
	ae := toAPIError(err)
	writeError(w, httpStatus(ae.Code), ae)
}

// httpStatus is the HTTP status of an error code.
func httpStatus(code api.Code) int {
	switch code {
	case api.CodeBadRequest:
		return http.StatusBadRequest
	case api.CodeForbidden:
		return http.StatusForbidden
	case api.CodeNotFound:
		return http.StatusNotFound
	case api.CodeContention:
		return http.StatusConflict
	case api.CodeConfig:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, status int, e *api.Error) {
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(&api.Error{Code: api.CodeInternal, Message: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
