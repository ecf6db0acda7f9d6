package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// ErrNotRunning reports that no service listens on the socket: there is no
// socket file, or only the stale one of a service that died. The command
// line exits 3 on it, with a hint on how to start the service.
var ErrNotRunning = errors.New("the tether service is not running")

// ErrUntrusted reports a service that was refused before anything was
// sent to it: its socket's directory, or the process that answers on the
// socket, is another user's (or on Windows the pipe is), who may have
// claimed the path first. The error names that user. The command line
// exits 3 on it.
var ErrUntrusted = platform.ErrUntrusted

// ErrUnreachable reports a socket that is there but whose connect was
// refused (EACCES, EPERM): the error says why. The command line exits 3
// on it.
var ErrUnreachable = errors.New("the tether service cannot be reached")

// ErrStreamClosed ends an event stream that the service closed: it shut
// down, or dropped a reader that fell too far behind. Reconnecting gives a
// fresh hello.
var ErrStreamClosed = errors.New("the service closed the event stream")

// maxErrorBody bounds how much of an error answer the client reads.
const maxErrorBody = 64 << 10

// Client speaks to the service of one profile over its local socket. Its
// methods are safe for concurrent use.
//
// Errors: *api.Error (errors.As) when the service answered with one;
// ErrNotRunning (errors.Is) when nothing listens on the socket;
// ErrUntrusted when what listens is not the user's; ErrUnreachable when
// the connect was refused; otherwise the transport's error, or the
// context's.
type Client struct {
	path string
	hc   *http.Client
}

// New returns a client of the service listening at socketPath (see
// api.SocketPath). It connects only when a method is called.
func New(socketPath string) *Client {
	// One connection per request (see oneShot): a connect over a local
	// socket is cheap, the service checks the peer per connection, and
	// no idle connection outlives a call or points at a service that has
	// since been restarted. No proxy and no compression: the
	// environment's proxy settings must never apply here. No Timeout on
	// the http.Client: the event stream lasts as long as its context;
	// every call is bounded by the caller's context.
	return &Client{path: socketPath, hc: &http.Client{Transport: oneShot{path: socketPath}}}
}

// dialSocket connects to the service's socket or pipe (platform.Dial:
// on Unix it refuses a socket directory or a listener of another user,
// on Windows a pipe another user created, before anything is sent).
// Nothing listening there is ErrNotRunning; a connect refused for lack
// of permission, ErrUnreachable.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	c, err := platform.Dial(ctx, path)
	switch {
	case errors.Is(err, platform.ErrNoListener):
		return nil, fmt.Errorf("%w: %w", ErrNotRunning, err)
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return c, err
}

// SocketPath returns the socket of this client.
func (c *Client) SocketPath() string { return c.path }

// Status returns the service's status.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := c.call(ctx, http.MethodGet, api.PathStatus, nil, &st)
	return st, err
}

// StatusWithUsage returns the service's status with each agent's Usage,
// which the service measures for this request (a cgroup's or job's
// accounting, or a walk of each tree's processes): a little more work
// than Status, for a caller that shows what each agent costs.
func (c *Client) StatusWithUsage(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := c.call(ctx, http.MethodGet, api.PathStatus+"?"+api.QueryUsage+"=1", nil, &st)
	return st, err
}

// Start enables and starts the agents ids. The service answers one Result
// per id, in order; a failure of one id is in its Result, not in the
// error, which reports a request that failed as a whole.
func (c *Client) Start(ctx context.Context, ids ...string) (api.Results, error) {
	return c.action(ctx, api.PathStart, ids)
}

// Stop disables and stops the agents ids; see Start for the answer.
func (c *Client) Stop(ctx context.Context, ids ...string) (api.Results, error) {
	return c.action(ctx, api.PathStop, ids)
}

// Restart restarts the agents ids; see Start for the answer.
func (c *Client) Restart(ctx context.Context, ids ...string) (api.Results, error) {
	return c.action(ctx, api.PathRestart, ids)
}

func (c *Client) action(ctx context.Context, path string, ids []string) (api.Results, error) {
	return c.Action(ctx, path, api.IDsRequest{IDs: ids})
}

// Action posts req to path (PathStart, PathStop or PathRestart): Start,
// Stop and Restart with the request's options, such as NoWait.
func (c *Client) Action(ctx context.Context, path string, req api.IDsRequest) (api.Results, error) {
	var res api.Results
	body, err := json.Marshal(req)
	if err != nil {
		return res, err
	}
	err = c.call(ctx, http.MethodPost, path, body, &res)
	return res, err
}

// Reload makes the service apply its config file again, and returns what
// that did.
func (c *Client) Reload(ctx context.Context) (api.Reloaded, error) {
	var done api.Reloaded
	err := c.call(ctx, http.MethodPost, api.PathReload, nil, &done)
	return done, err
}

// Quit makes the service stop every agent and exit. It returns once the
// agents are stopped; the service then closes its socket.
func (c *Client) Quit(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, api.PathQuit, nil, nil)
}

// Logs returns the last n lines of agent id's log; n <= 0 asks for the
// service's default (100). The service allows at most 10000.
func (c *Client) Logs(ctx context.Context, id string, n int) (api.Logs, error) {
	q := url.Values{"id": {id}}
	if n > 0 {
		q.Set("n", strconv.Itoa(n))
	}
	var lg api.Logs
	err := c.call(ctx, http.MethodGet, api.PathLogs+"?"+q.Encode(), nil, &lg)
	return lg, err
}

// Events opens the event stream. The error reports a stream that could not
// be opened (ErrNotRunning, or an *Error such as not_found for an unknown
// id in logs). The sequence then yields a hello event with the whole
// status, an agent event whenever an agent's row changes, and a log event
// per new line of the agents in logs.
//
// A handover of the service (an upgrade, api.EventHandover) does not end
// the sequence: it goes on with the successor's stream, which begins with
// a hello; log lines written in between may be missed.
//
// The sequence can be ranged over once. It ends when the loop breaks, or
// with a last error: ctx's error once ctx is done, ErrStreamClosed when the
// service closed the stream, or the transport's. The connection is released
// when the sequence ends, or when ctx is done; a caller that will not range
// over it must cancel ctx.
func (c *Client) Events(ctx context.Context, logs ...string) (iter.Seq2[api.Event, error], error) {
	return c.events(ctx, 0, logs)
}

// FollowLog is Events with the log of id: first its last n lines, then
// every new line, from one point in the file, so none is lost or repeated
// between the two.
func (c *Client) FollowLog(ctx context.Context, id string, n int) (iter.Seq2[api.Event, error], error) {
	return c.events(ctx, n, []string{id})
}

// FollowLogs is FollowLog for several agents: the last n lines of each,
// then every new line of each.
func (c *Client) FollowLogs(ctx context.Context, n int, ids ...string) (iter.Seq2[api.Event, error], error) {
	return c.events(ctx, n, ids)
}

func (c *Client) events(ctx context.Context, tail int, logs []string) (iter.Seq2[api.Event, error], error) {
	path := eventsPath(tail, logs)
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	return func(yield func(api.Event, error) bool) {
		defer func() { resp.Body.Close() }()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev api.Event
			if err := dec.Decode(&ev); err != nil {
				switch {
				case ctx.Err() != nil:
					err = ctx.Err()
				case errors.Is(err, io.EOF):
					err = ErrStreamClosed
				case errors.Is(err, io.ErrUnexpectedEOF):
					err = fmt.Errorf("%w in the middle of an event", ErrStreamClosed)
				}
				yield(api.Event{}, err)
				return
			}
			if ev.Type == api.EventHandover {
				// The service hands over to its successor, which
				// listens on the same socket: the stream goes on
				// there, from its hello (the logs from their new
				// lines).
				resp.Body.Close()
				next, err := c.do(ctx, http.MethodGet, eventsPath(0, logs), nil)
				if err != nil {
					// resp stays the closed one, for the deferred Close.
					yield(api.Event{}, fmt.Errorf("reconnecting after the service's handover: %w", err))
					return
				}
				resp = next
				dec = json.NewDecoder(resp.Body)
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
	}, nil
}

func eventsPath(tail int, logs []string) string {
	path := api.PathEvents
	if len(logs) > 0 {
		q := url.Values{"logs": {strings.Join(logs, ",")}}
		if tail > 0 {
			q.Set("n", strconv.Itoa(tail))
		}
		path += "?" + q.Encode()
	}
	return path
}

// call makes one request and decodes a successful answer into out.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	resp, err := c.do(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// do makes one request and returns a successful response, whose body the
// caller closes, or the error the service answered with.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+api.Host+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Close = true // the connection ends with the answer
	resp, err := c.hc.Do(req)
	if err != nil {
		// The *url.Error only adds the method and a URL that names no
		// real host; its cause is what the caller can act on.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var e api.Error
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		return nil, &api.Error{Code: api.CodeInternal, Message: fmt.Sprintf("unexpected answer to %s %s: %s: %.200s", method, path, resp.Status, b)}
	}
	return nil, &e
}
