// Package gateway is a small client of etcd's JSON gateway: the HTTP API
// that every etcd member (3.4 and later) serves under /v3/ on its client
// URLs, beside gRPC. It speaks the few calls identity leases need (a
// range, a transaction, a lease's grant, renewal and revocation, a
// watch) and a member's status, with nothing but net/http and
// encoding/json, so that the binary links neither gRPC nor protobuf.
//
// A Client knows several members: it sends each request to the leader
// once it has found it (after the first answer, and again after every
// election it sees), else to the one that answered last, and moves to the
// next on a connection error, on an answer of 500 or above, or when the
// member has no leader (every request asks for one, as etcd's
// require-leader option does). Connections are kept alive between
// requests, so that a request costs one round trip.
//
// Only the lease client and the tests' etcd harness import it.
package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Code is the gRPC status code of an error etcd answered with.
type Code int

// The codes a caller branches on.
const (
	// CodeNotFound is etcd's answer about a lease it does not know:
	// expired, revoked or never granted.
	CodeNotFound Code = 5
	// CodeUnavailable is a member that cannot serve now: it has no
	// leader, it is stopping, or the request timed out in it.
	CodeUnavailable Code = 14
)

// Error is a request etcd refused: the gateway's HTTP status and the
// gRPC status it carries.
type Error struct {
	Endpoint string
	Status   int // the HTTP status
	Code     Code
	Message  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("etcd at %s: %s (code %d, HTTP %d)", e.Endpoint, e.Message, e.Code, e.Status)
}

// IsCode reports whether err is an *Error of code c.
func IsCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// ErrClosed is the error of a request on a closed Client.
var ErrClosed = errors.New("the etcd client is closed")

// Timing of the connections: a dial's bound (the request's context may
// bound it more), and TCP keep-alive probes, so that a watch on a
// connection the network silently dropped ends within about 20 s.
const (
	dialTimeout = 5 * time.Second
	probeIdle   = 5 * time.Second
	probeEvery  = 5 * time.Second
	probeCount  = 3
)

// maxBody bounds an answer's size: a few keys, never more.
const maxBody = 4 << 20

// drainWithin bounds the wait for the end of an answer already read:
// only an answer read to its end leaves its connection to the next
// request.
const drainWithin = 100 * time.Millisecond

// Client is a client of one etcd cluster through its members' gateways.
type Client struct {
	endpoints []string // base URLs, without a trailing slash
	hc        *http.Client
	tr        *http.Transport

	ctx    context.Context // ended by Close: every request and watch with it
	cancel context.CancelFunc

	mu      sync.Mutex
	good    int    // the endpoint that answered last, tried first after the leader
	leader  int    // the leader's endpoint, tried first; -1 when not known
	term    uint64 // the raft term of the last answer
	seeking bool   // a search for the leader runs
	wg      sync.WaitGroup
}

// New is a client of the members at endpoints (http:// or https:// URLs
// of host and port). tlsConfig, when not nil, is the TLS of https
// endpoints (a CA, a client certificate); nil uses the system's roots.
// It connects nowhere until the first request.
func New(endpoints []string, tlsConfig *tls.Config) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("no etcd endpoint")
	}
	c := &Client{leader: -1}
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q is not an etcd client URL (http:// or https://, host and port)", ep)
		}
		c.endpoints = append(c.endpoints, u.Scheme+"://"+u.Host)
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: probeIdle, Interval: probeEvery, Count: probeCount}}
	c.tr = &http.Transport{
		// etcd is reached directly: a proxy of the environment is for
		// the web, and would hold a watch's stream back.
		Proxy:               nil,
		DialContext:         d.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: dialTimeout,
		MaxIdleConnsPerHost: 4,
		DisableCompression:  true,
	}
	c.hc = &http.Client{Transport: c.tr}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close ends every request and watch in flight and closes the
// connections. Requests after it fail with ErrClosed.
func (c *Client) Close() {
	c.cancel()
	c.wg.Wait()
	c.tr.CloseIdleConnections()
}

// order is the endpoints in the order to try them: the leader's, when
// known, then the one that answered last, then the others in turn.
func (c *Client) order() []int {
	c.mu.Lock()
	first, leader := c.good, c.leader
	c.mu.Unlock()
	out := make([]int, 0, len(c.endpoints))
	if leader >= 0 {
		out = append(out, leader)
	}
	for i := range len(c.endpoints) {
		if j := (first + i) % len(c.endpoints); j != leader {
			out = append(out, j)
		}
	}
	return out
}

// answered records that endpoint i answered, or failed: the next request
// goes to it, or to the one after it.
func (c *Client) answered(i int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ok:
		c.good = i
	case c.good == i:
		c.good = (i + 1) % len(c.endpoints)
	}
	if !ok && c.leader == i {
		// Out of reach, failing or without a leader itself: looked
		// for again at the next answer's term, or the next election.
		c.leader, c.term = -1, 0
	}
}

// failover reports whether err, from one member, is worth trying the
// next one for: the member is out of reach, failing or without a leader.
func failover(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status >= 500 || e.Code == CodeUnavailable
	}
	return true // no answer at all
}

// post sends in to path on each member in turn until one answers, and
// returns that answer's body, open, with the member's index. The caller
// closes the body.
func (c *Client) post(ctx context.Context, path string, in any) (io.ReadCloser, int, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, 0, err
	}
	if c.ctx.Err() != nil {
		return nil, 0, ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	var errs []error
	for _, i := range c.order() {
		var rc io.ReadCloser
		rc, err = c.try(ctx, c.endpoints[i], path, body)
		if err == nil {
			c.answered(i, true)
			// The body is read under ctx: cancel when it is closed.
			return &closer{ReadCloser: rc, done: func() { stop(); cancel() }}, i, nil
		}
		errs = append(errs, err)
		if !failover(err) {
			break
		}
		c.answered(i, false)
		if ctx.Err() != nil {
			break
		}
	}
	stop()
	cancel()
	if c.ctx.Err() != nil {
		return nil, 0, ErrClosed
	}
	if len(errs) == 1 {
		return nil, 0, errs[0]
	}
	return nil, 0, errors.Join(errs...)
}

// try sends one request to one member.
func (c *Client) try(ctx context.Context, endpoint, path string, body []byte) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	// etcd's require-leader, as gRPC metadata: a member without a leader
	// refuses at once (and ends a watch when it loses it), rather than
	// hold the request until it times out.
	req.Header.Set("Grpc-Metadata-Hasleader", "true")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("etcd at %s: %w", endpoint, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	e := &Error{Endpoint: endpoint, Status: resp.StatusCode}
	var b struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if json.Unmarshal(raw, &b) == nil {
		e.Code, e.Message = Code(b.Code), cmp.Or(b.Message, b.Error)
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = resp.Status
		}
	}
	return nil, e
}

// call posts in to path and decodes the answer into out.
func (c *Client) call(ctx context.Context, path string, in, out any) error {
	rc, i, err := c.post(ctx, path, in)
	if err != nil {
		return err
	}
	if err := decode(rc, c.endpoints[i], path, out); err != nil {
		return err
	}
	if h, ok := out.(headed); ok {
		c.saw(i, h.header())
	}
	return nil
}

// decode reads the answer rc, from endpoint to path, into out, and
// closes it once read to its end.
func decode(rc io.ReadCloser, endpoint, path string, out any) error {
	defer rc.Close()
	if err := json.NewDecoder(io.LimitReader(rc, maxBody)).Decode(out); err != nil {
		return fmt.Errorf("etcd at %s: reading the answer to %s: %w", endpoint, path, err)
	}
	drain(rc)
	return nil
}

// drain reads what is left of an answer whose message was read (the end
// of its chunks, the gateway's trailer), so that its connection can be
// kept; what is not there within drainWithin is dropped with the
// connection.
func drain(rc io.ReadCloser) {
	t := time.AfterFunc(drainWithin, func() { rc.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, maxBody))
	t.Stop()
}

// stream posts in to path, whose answer is a stream of {"result": ...}
// or {"error": ...} objects, and returns a decoder of that stream.
func (c *Client) stream(ctx context.Context, path string, in any) (*stream, error) {
	rc, i, err := c.post(ctx, path, in)
	if err != nil {
		return nil, err
	}
	return &stream{rc: rc, dec: json.NewDecoder(rc), endpoint: c.endpoints[i], at: i}, nil
}

// stream is a streamed answer.
type stream struct {
	rc       io.ReadCloser
	dec      *json.Decoder
	endpoint string
	at       int // the endpoint's index
}

// next decodes the next result into out: io.EOF at the stream's end, an
// *Error when etcd ended it with one.
func (s *stream) next(out any) error {
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code     int    `json:"grpc_code"`
			HTTPCode int    `json:"http_code"`
			Message  string `json:"message"`
		} `json:"error"`
	}
	if err := s.dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("etcd at %s: %w", s.endpoint, err)
	}
	if m.Error != nil {
		return &Error{Endpoint: s.endpoint, Status: m.Error.HTTPCode, Code: Code(m.Error.Code), Message: m.Error.Message}
	}
	if err := json.Unmarshal(m.Result, out); err != nil {
		return fmt.Errorf("etcd at %s: %w", s.endpoint, err)
	}
	return nil
}

func (s *stream) close() error { return s.rc.Close() }

// finish reads the stream to its end, then closes it: for a stream whose
// last message was read.
func (s *stream) finish() error {
	drain(s.rc)
	return s.rc.Close()
}

// closer runs done once its body is closed.
type closer struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (c *closer) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.done)
	return err
}
