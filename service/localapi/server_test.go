package localapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/platform"
)

// waitLimit bounds every wait of these tests.
const waitLimit = 10 * time.Second

// fakeBackend is an in-memory Backend: agents "a" and "b", start errors
// to order, and subscriptions it counts.
type fakeBackend struct {
	mu        sync.Mutex
	agents    []api.Agent
	fail      map[string]error // Start error by id
	reloadErr error
	logsN     int // n of the last Logs call
	quits     int
	subs      map[int]chan api.Event
	subLogs   map[int][]string
	next      int
	subscribe chan struct{} // a signal per Subscribe
}

func newFake() *fakeBackend {
	return &fakeBackend{
		agents: []api.Agent{
			{ID: "a", Identity: "a@relay", State: api.StateStopped},
			{ID: "b", Identity: "b@relay", State: api.StateStopped},
		},
		fail:      map[string]error{},
		subs:      map[int]chan api.Event{},
		subLogs:   map[int][]string{},
		subscribe: make(chan struct{}, 16),
	}
}

func (f *fakeBackend) Status() api.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return api.Status{Profile: "test", ServicePID: os.Getpid(), Agents: append([]api.Agent(nil), f.agents...)}
}

// StatusWithUsage gives every agent a Usage of one process.
func (f *fakeBackend) StatusWithUsage() api.Status {
	st := f.Status()
	for i := range st.Agents {
		st.Agents[i].Usage = &api.Usage{Procs: 1}
	}
	return st
}

func (f *fakeBackend) set(id string, state api.State) (api.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.agents {
		if f.agents[i].ID == id {
			f.agents[i].State = state
			a := f.agents[i]
			for _, ch := range f.subs {
				ch <- api.Event{Type: api.EventAgent, Agent: &a}
			}
			return a, nil
		}
	}
	return api.Agent{}, &api.Error{Code: api.CodeNotFound, Message: "no agent " + id}
}

func (f *fakeBackend) Start(ctx context.Context, id string, _ bool) (api.Agent, error) {
	f.mu.Lock()
	err := f.fail[id]
	f.mu.Unlock()
	if err != nil {
		a, _ := f.set(id, api.StateFailed)
		return a, err
	}
	return f.set(id, api.StateRunning)
}

func (f *fakeBackend) Stop(ctx context.Context, id string) (api.Agent, error) {
	return f.set(id, api.StateStopped)
}

func (f *fakeBackend) Restart(ctx context.Context, id string, _ bool) (api.Agent, error) {
	return f.set(id, api.StateRunning)
}

func (f *fakeBackend) Reload(ctx context.Context) (api.Reloaded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reloadErr != nil {
		return api.Reloaded{}, f.reloadErr
	}
	return api.Reloaded{Added: []string{"x"}, Restarted: []string{"y", "z"}}, nil
}

func (f *fakeBackend) Logs(id string, n int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logsN = n
	return []string{"one", "two"}, nil
}

func (f *fakeBackend) Subscribe(logs []string, _ int) (<-chan api.Event, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	ch := make(chan api.Event, 64)
	f.subs[id] = ch
	f.subLogs[id] = logs
	f.subscribe <- struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.subs, id)
		})
	}
}

// publish sends ev to every subscriber.
func (f *fakeBackend) publish(ev api.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- ev
	}
}

// closeAll ends every subscription from the backend's side.
func (f *fakeBackend) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, ch := range f.subs {
		close(ch)
		delete(f.subs, id)
	}
}

// locked returns what get reads under the backend's lock.
func locked[T any](f *fakeBackend, get func() T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	return get()
}

func (f *fakeBackend) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func (f *fakeBackend) Quit(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quits++
	return nil
}

func (f *fakeBackend) Upgrade(context.Context, api.UpgradeRequest) (api.UpgradeAnswer, error) {
	return api.UpgradeAnswer{}, &api.Error{Code: api.CodeUpgrade, Message: "no upgrade here"}
}

// testServer serves a backend on a fresh socket (a named pipe on
// Windows) until shut down.
type testServer struct {
	path   string
	srv    *Server
	served chan error
	once   sync.Once
}

func (ts *testServer) shutdown(t *testing.T) {
	t.Helper()
	ts.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := ts.srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-ts.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("Serve did not return after Shutdown")
		}
	})
}

func serve(t *testing.T, b Backend, opts ...func(*Server)) *testServer {
	t.Helper()
	return serveAt(t, b, testPath(t), opts...)
}

// serveAt serves b at path, with opts applied to the server before it
// serves.
func serveAt(t *testing.T, b Backend, path string, opts ...func(*Server)) *testServer {
	t.Helper()
	srv := New(b, listen(t, path))
	for _, o := range opts {
		o(srv)
	}
	ts := &testServer{path: path, srv: srv, served: make(chan error, 1)}
	go func() { ts.served <- ts.srv.Serve() }()
	t.Cleanup(func() { ts.shutdown(t) })
	return ts
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// raw makes a request the client.Client would not make and returns the
// status and the decoded api.Error, if the body is one.
func raw(t *testing.T, path string, req *http.Request) (int, *api.Error) {
	t.Helper()
	resp, err := rawClient(path).Do(req.WithContext(testCtx(t)))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var e api.Error
	if json.Unmarshal(b, &e) != nil || e.Code == "" {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, &e
}

// rawClient is an HTTP client of the socket at path that sends requests
// as they are, unlike client.Client.
func rawClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, path)
		},
		DisableKeepAlives: true,
	}}
}

func newRequest(t *testing.T, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+api.Host+path, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func wantAPIError(t *testing.T, what string, err error, code api.Code) {
	t.Helper()
	e, ok := errors.AsType[*api.Error](err)
	if !ok || e.Code != code {
		t.Errorf("%s = %v, want an *api.Error with code %s", what, err, code)
	}
}

func TestStatusAndActions(t *testing.T) {
	f := newFake()
	f.fail["b"] = &api.Error{Code: api.CodeContention, Message: "held by pid 7"}
	ts := serve(t, f)
	c := client.New(ts.path)
	ctx := testCtx(t)

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Profile != "test" || len(st.Agents) != 2 || st.Agents[0].Usage != nil {
		t.Fatalf("Status = %+v", st)
	}
	// ?usage=1 asks for the usage; nothing else but 0 is a valid value.
	if st, err := c.StatusWithUsage(ctx); err != nil || len(st.Agents) != 2 || st.Agents[0].Usage == nil || st.Agents[0].Usage.Procs != 1 {
		t.Fatalf("StatusWithUsage = %+v, %v", st, err)
	}

	// One Result per id, in order; the failures are per id and the
	// request as a whole succeeds.
	res, err := c.Start(ctx, "a", "nope", "b")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if len(res.Results) != 3 {
		t.Fatalf("Start: %d results, want 3: %+v", len(res.Results), res)
	}
	if r := res.Results[0]; r.ID != "a" || r.Error != nil || r.Agent == nil || r.Agent.State != api.StateRunning {
		t.Errorf("result for a: %+v", r)
	}
	if r := res.Results[1]; r.ID != "nope" || r.Error == nil || r.Error.Code != api.CodeNotFound || r.Agent != nil {
		t.Errorf("result for an unknown id: %+v, want not_found", r)
	}
	if r := res.Results[2]; r.ID != "b" || r.Error == nil || r.Error.Code != api.CodeContention ||
		r.Error.Message != "held by pid 7" || r.Agent == nil || r.Agent.State != api.StateFailed {
		t.Errorf("result for b: %+v, want contention with the failed row", r)
	}

	// A backend error that is no *api.Error is internal; a wrapped one
	// keeps its code and its context.
	f.mu.Lock()
	f.fail["a"] = errors.New("disk on fire")
	f.fail["b"] = fmt.Errorf("starting %q: %w", "b", &api.Error{Code: api.CodeSpawn, Message: "no such file"})
	f.mu.Unlock()
	res, err = c.Start(ctx, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Results[0].Error; e == nil || e.Code != api.CodeInternal || e.Message != "disk on fire" {
		t.Errorf("plain error: %+v, want internal", e)
	}
	if e := res.Results[1].Error; e == nil || e.Code != api.CodeSpawn || !strings.Contains(e.Message, `starting "b"`) {
		t.Errorf("wrapped error: %+v, want spawn with context", e)
	}

	if res, err := c.Stop(ctx, "a"); err != nil || res.Results[0].Agent.State != api.StateStopped {
		t.Errorf("Stop = %+v, %v", res, err)
	}
	if res, err := c.Restart(ctx, "b"); err != nil || res.Results[0].Agent.State != api.StateRunning {
		t.Errorf("Restart = %+v, %v", res, err)
	}
	_, err = c.Stop(ctx)
	wantAPIError(t, "Stop with no ids", err, api.CodeBadRequest)
}

func TestLogs(t *testing.T) {
	f := newFake()
	ts := serve(t, f)
	c := client.New(ts.path)
	ctx := testCtx(t)

	lg, err := c.Logs(ctx, "a", 0)
	if err != nil || lg.ID != "a" || len(lg.Lines) != 2 {
		t.Fatalf("Logs = %+v, %v", lg, err)
	}
	logsN := func() int { return locked(f, func() int { return f.logsN }) }
	if n := logsN(); n != 100 {
		t.Errorf("default n = %d, want 100", n)
	}
	if _, err := c.Logs(ctx, "a", 10000); err != nil || logsN() != 10000 {
		t.Errorf("n=10000: %v, backend got %d", err, logsN())
	}
	_, err = c.Logs(ctx, "a", 10001)
	wantAPIError(t, "Logs n=10001", err, api.CodeBadRequest)
	_, err = c.Logs(ctx, "nope", 5)
	wantAPIError(t, "Logs of an unknown id", err, api.CodeNotFound)
	_, err = c.Logs(ctx, "", 5)
	wantAPIError(t, "Logs without an id", err, api.CodeBadRequest)
	code, e := raw(t, ts.path, newRequest(t, "GET", api.PathLogs+"?id=a&n=ten", nil))
	if code != http.StatusBadRequest || e == nil || e.Code != api.CodeBadRequest {
		t.Errorf("n=ten: %d %+v, want 400 bad_request", code, e)
	}
}

func TestReloadAndQuit(t *testing.T) {
	f := newFake()
	ts := serve(t, f)
	c := client.New(ts.path)
	ctx := testCtx(t)
	if done, err := c.Reload(ctx); err != nil || done.Summary() != "1 added, 2 restarted" {
		t.Fatalf("Reload: %+v, %v; want 1 added, 2 restarted", done, err)
	}
	f.mu.Lock()
	f.reloadErr = &api.Error{Code: api.CodeConfig, Message: "agents.yaml:3: unknown key"}
	f.mu.Unlock()
	_, err := c.Reload(ctx)
	wantAPIError(t, "Reload of a bad config", err, api.CodeConfig)

	if err := c.Quit(ctx); err != nil {
		t.Fatalf("Quit: %v", err)
	}
	quits := func() int { return locked(f, func() int { return f.quits }) }
	if n := quits(); n != 1 {
		t.Errorf("backend quit %d times, want 1", n)
	}
	// A body on quit or reload, if any, must be an empty object.
	code, e := raw(t, ts.path, newRequest(t, "POST", api.PathQuit, strings.NewReader(`{"now":true}`)))
	if code != http.StatusBadRequest || e == nil || e.Code != api.CodeBadRequest || quits() != 1 {
		t.Errorf("quit with an unknown field: %d %+v (quits %d), want 400 and no quit", code, e, quits())
	}
}

func TestRequestChecks(t *testing.T) {
	f := newFake()
	ts := serve(t, f)
	status := func() *http.Request { return newRequest(t, "GET", api.PathStatus, nil) }
	with := func(req *http.Request, k, v string) *http.Request { req.Header.Set(k, v); return req }
	host := func(req *http.Request, h string) *http.Request { req.Host = h; return req }
	start := func(body string) *http.Request {
		return newRequest(t, "POST", api.PathStart, strings.NewReader(body))
	}
	huge := bytes.Repeat([]byte(" "), api.MaxBody)
	huge = append(huge, []byte(`{"ids":["a"]}`)...)

	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
		code   api.Code // "" when the answer is no api.Error
	}{
		{"plain status", status(), 200, ""},
		{"status with usage", newRequest(t, "GET", api.PathStatus+"?usage=1", nil), 200, ""},
		{"status with a bad usage", newRequest(t, "GET", api.PathStatus+"?usage=yes", nil), 400, api.CodeBadRequest},
		{"Origin", with(status(), "Origin", "https://evil.example"), 403, api.CodeForbidden},
		{"Origin null", with(status(), "Origin", "null"), 403, api.CodeForbidden},
		{"Sec-Fetch-Site cross-site", with(status(), "Sec-Fetch-Site", "cross-site"), 403, api.CodeForbidden},
		{"Sec-Fetch-Site same-origin", with(status(), "Sec-Fetch-Site", "same-origin"), 403, api.CodeForbidden},
		{"Sec-Fetch-Site none", with(status(), "Sec-Fetch-Site", "none"), 200, ""},
		{"Host localhost", host(status(), "localhost"), 403, api.CodeForbidden},
		{"Host 127.0.0.1", host(status(), "127.0.0.1:80"), 403, api.CodeForbidden},
		{"Origin on a POST", with(start(`{"ids":["a"]}`), "Origin", "http://localhost"), 403, api.CodeForbidden},
		{"body over MaxBody", start(string(huge)), 413, api.CodeBadRequest},
		{"body over MaxBody, chunked", newRequest(t, "POST", api.PathStart, io.MultiReader(bytes.NewReader(huge))), 413, api.CodeBadRequest},
		{"bad JSON", start(`{"ids":["a"`), 400, api.CodeBadRequest},
		{"not an object", start(`["a"]`), 400, api.CodeBadRequest},
		{"unknown field", start(`{"ids":["a"],"force":true}`), 400, api.CodeBadRequest},
		{"two values", start(`{"ids":["a"]}{"ids":["b"]}`), 400, api.CodeBadRequest},
		{"empty body", start(``), 400, api.CodeBadRequest},
		{"no ids", start(`{"ids":[]}`), 400, api.CodeBadRequest},
		{"GET on start", newRequest(t, "GET", api.PathStart, nil), 405, api.CodeBadRequest},
		{"POST on status", newRequest(t, "POST", api.PathStatus, nil), 405, api.CodeBadRequest},
		{"unknown path", newRequest(t, "GET", api.Version+"/nothing", nil), 404, api.CodeNotFound},
		{"unversioned path", newRequest(t, "GET", "/status", nil), 404, api.CodeNotFound},
	} {
		code, e := raw(t, ts.path, tc.req)
		var gotCode api.Code
		if e != nil {
			gotCode = e.Code
		}
		if code != tc.status || gotCode != tc.code {
			t.Errorf("%s: %d %+v, want %d %q", tc.name, code, e, tc.status, tc.code)
		}
	}
	// A body far over the limit: the server reads no more than the limit
	// and answers 413, but a client still writing may see its write fail
	// (broken pipe) before it reads the answer. Either way the server
	// stays healthy.
	big := start(string(bytes.Repeat([]byte(" "), 8<<20)))
	if resp, err := rawClient(ts.path).Do(big.WithContext(testCtx(t))); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("8 MiB body: %s, want 413", resp.Status)
		}
	} else if !brokenPipe(err) {
		t.Errorf("8 MiB body: %v, want 413 or a broken pipe", err)
	}
	if code, _ := raw(t, ts.path, status()); code != http.StatusOK {
		t.Errorf("status after an 8 MiB body: %d", code)
	}

	// Nothing refused reached the backend.
	for _, a := range f.Status().Agents {
		if a.State != api.StateStopped {
			t.Errorf("agent %s is %s: a refused request reached the backend", a.ID, a.State)
		}
	}
}

// TestNoHost: an HTTP/1.0 request may have no Host at all, and is served.
func TestNoHost(t *testing.T) {
	ts := serve(t, newFake())
	c, err := dial(testCtx(t), ts.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(c, "GET "+api.PathStatus+" HTTP/1.0\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP/1.0 without Host: %s, want 200", resp.Status)
	}
}

// next reads the next event, with a deadline.
func next(t *testing.T, pull func() (api.Event, error, bool)) api.Event {
	t.Helper()
	type item struct {
		ev  api.Event
		err error
		ok  bool
	}
	got := make(chan item, 1)
	go func() {
		ev, err, ok := pull()
		got <- item{ev, err, ok}
	}()
	select {
	case it := <-got:
		if !it.ok || it.err != nil {
			t.Fatalf("event stream: ok=%v err=%v", it.ok, it.err)
		}
		return it.ev
	case <-time.After(waitLimit):
		t.Fatal("no event within the deadline")
		return api.Event{}
	}
}

// lastErr reads the stream's last item, which must be an error.
func lastErr(t *testing.T, pull func() (api.Event, error, bool)) error {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		ev, err, ok := pull()
		if ok && err == nil {
			err = fmt.Errorf("unexpected event %+v", ev)
		}
		got <- err
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(waitLimit):
		t.Fatal("the stream did not end within the deadline")
		return nil
	}
}

func openEvents(t *testing.T, c *client.Client, ctx context.Context, logs ...string) (func() (api.Event, error, bool), func()) {
	t.Helper()
	seq, err := c.Events(ctx, logs...)
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	pull, stop := iter.Pull2(seq)
	return pull, stop
}

func TestEvents(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions...)
	f := newFake()
	ts := serve(t, f)
	c := client.New(ts.path)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()

	pull, stop := openEvents(t, c, ctx, "a")
	defer stop()
	hello := next(t, pull)
	if hello.Type != api.EventHello || hello.Status == nil || len(hello.Status.Agents) != 2 || hello.Time.IsZero() {
		t.Fatalf("first event %+v, want a hello with the status", hello)
	}
	if logs := locked(f, func() []string { return f.subLogs[0] }); f.subscribers() != 1 || len(logs) != 1 || logs[0] != "a" {
		t.Fatalf("subscriptions: %d, logs %v", f.subscribers(), logs)
	}

	// An action by another client shows up as an agent event.
	if _, err := c.Start(testCtx(t), "a"); err != nil {
		t.Fatal(err)
	}
	ev := next(t, pull)
	if ev.Type != api.EventAgent || ev.Agent == nil || ev.Agent.ID != "a" || ev.Agent.State != api.StateRunning {
		t.Fatalf("event %+v, want agent a running", ev)
	}
	f.publish(api.Event{Type: api.EventLog, ID: "a", Line: "hello from a"})
	if ev := next(t, pull); ev.Type != api.EventLog || ev.ID != "a" || ev.Line != "hello from a" {
		t.Fatalf("event %+v, want a log line", ev)
	}

	// The client goes away: the stream ends on both sides.
	cancel()
	if err := lastErr(t, pull); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel, the stream ended with %v, want context.Canceled", err)
	}
	testproc.Eventually(t, waitLimit, func() bool { return f.subscribers() == 0 }, "timed out waiting for the server to cancel its subscription")
	stop()
	ts.shutdown(t)
}

func TestEventsEndOnShutdown(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions...)
	f := newFake()
	ts := serve(t, f)
	c := client.New(ts.path)
	pull, stop := openEvents(t, c, testCtx(t))
	defer stop()
	next(t, pull)
	ts.shutdown(t)
	if err := lastErr(t, pull); !errors.Is(err, client.ErrStreamClosed) {
		t.Errorf("after Shutdown, the stream ended with %v, want ErrStreamClosed", err)
	}
	if f.subscribers() != 0 {
		t.Error("the subscription outlived the stream")
	}
	listenerGone(t, ts.path)
	if _, err := c.Status(testCtx(t)); !errors.Is(err, client.ErrNotRunning) {
		t.Errorf("Status after Shutdown = %v, want ErrNotRunning", err)
	}
}

func TestEventsBackendCloses(t *testing.T) {
	defer goleak.VerifyNone(t, leakOptions...)
	f := newFake()
	ts := serve(t, f)
	pull, stop := openEvents(t, client.New(ts.path), testCtx(t))
	defer stop()
	next(t, pull)
	f.closeAll()
	if err := lastErr(t, pull); !errors.Is(err, client.ErrStreamClosed) {
		t.Errorf("the stream ended with %v, want ErrStreamClosed", err)
	}
	stop()
	ts.shutdown(t)
}

func TestEventsUnknownLogID(t *testing.T) {
	f := newFake()
	ts := serve(t, f)
	_, err := client.New(ts.path).Events(testCtx(t), "a", "nope")
	wantAPIError(t, "Events for an unknown id", err, api.CodeNotFound)
	if n := locked(f, func() int { return len(f.subLogs) }); n != 0 {
		t.Errorf("the backend was subscribed to %d time(s)", n)
	}
}

// TestShutdownBeforeServe: the listener is closed, and its socket removed,
// even when Serve never ran.
func TestShutdownBeforeServe(t *testing.T) {
	path := testPath(t)
	s := New(newFake(), listen(t, path))
	if err := s.Shutdown(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	listenerGone(t, path)
	if err := s.Serve(); err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
}

// TestPeerIsCaller: the real check names this process, as its own user,
// for a connection it opened.
func TestPeerIsCaller(t *testing.T) {
	seen := make(chan peer, 1)
	ts := serve(t, newFake(), func(s *Server) {
		s.peerOf = func(c net.Conn) peer {
			p := peerOf(c)
			select {
			case seen <- p:
			default:
			}
			return p
		}
	})
	if _, err := client.New(ts.path).Status(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	self, err := platform.CurrentUser()
	if err != nil {
		t.Fatal(err)
	}
	p := <-seen
	if p.err != nil || p.user != self || p.pid != os.Getpid() {
		t.Errorf("peer of our own connection = %+v, want %s %s and pid %d", p, platform.UserKind, self, os.Getpid())
	}
}

// TestPeerRefused: a caller the peer check does not let in is refused,
// on every connection, before anything reaches the backend. The check is
// replaced to play callers a test cannot be: another user (Wine has one),
// a caller that cannot be identified, a service that cannot tell its own
// user.
func TestPeerRefused(t *testing.T) {
	f := newFake()
	var checks atomic.Int32
	intruder := serve(t, f, func(s *Server) {
		s.peerOf = func(net.Conn) peer {
			checks.Add(1)
			return peer{user: "intruder", pid: 4242}
		}
	})
	c := client.New(intruder.path)
	ctx := testCtx(t)
	_, err := c.Status(ctx)
	wantAPIError(t, "Status of another user", err, api.CodeForbidden)
	if e, ok := errors.AsType[*api.Error](err); ok && (!strings.Contains(e.Message, platform.UserKind+" intruder") || !strings.Contains(e.Message, "pid 4242")) {
		t.Errorf("the refusal does not name the caller: %q", e.Message)
	}
	_, err = c.Start(ctx, "a")
	wantAPIError(t, "Start by another user", err, api.CodeForbidden)
	_, err = c.Events(ctx)
	wantAPIError(t, "Events for another user", err, api.CodeForbidden)
	if n := checks.Load(); n != 3 {
		t.Errorf("the peer was checked %d times for 3 connections", n)
	}
	if a := f.Status().Agents[0]; a.State != api.StateStopped || f.subscribers() != 0 {
		t.Errorf("a refused request reached the backend: %+v, %d subscribers", a, f.subscribers())
	}

	unknown := serve(t, f, func(s *Server) {
		s.peerOf = func(net.Conn) peer { return peer{err: errors.New("no token")} }
	})
	_, err = client.New(unknown.path).Status(ctx)
	wantAPIError(t, "Status of an unknown caller", err, api.CodeForbidden)
	if e, ok := errors.AsType[*api.Error](err); ok && !strings.Contains(e.Message, "no token") {
		t.Errorf("the refusal does not say why: %q", e.Message)
	}

	lost := serve(t, f, func(s *Server) { s.self, s.selfErr = "", errors.New("no process token") })
	_, err = client.New(lost.path).Status(ctx)
	wantAPIError(t, "Status when the service cannot tell its user", err, api.CodeForbidden)
}

// Answered is closed by the first answer, not before.
func TestAnswered(t *testing.T) {
	ts := serve(t, newFake())
	select {
	case <-ts.srv.Answered():
		t.Fatal("answered before any request")
	default:
	}
	if _, err := client.New(ts.path).Status(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ts.srv.Answered():
	case <-time.After(waitLimit):
		t.Fatal("not answered after a status")
	}
}
