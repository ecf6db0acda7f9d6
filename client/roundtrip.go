package client

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
)

// oneShot is the client's http.RoundTripper: each request goes on a
// connection of its own to the service's socket, written and read on the
// caller's goroutine, and the connection is closed with the answer's
// body. http.Transport would serve the same calls with a dial goroutine,
// a read and a write goroutine per connection and a pool of idle
// connections that a connection per request never uses; a command line
// that makes one call pays for all of it at its start (about an eighth
// of the CPU time of "tether status").
type oneShot struct{ path string }

func (o oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	conn, err := dialSocket(ctx, o.path)
	if err != nil {
		return nil, err
	}
	// The context ends the exchange whenever it ends: a read or write
	// blocked on the connection returns.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := req.Write(conn); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fail(err)
	}
	resp.Body = &connBody{body: resp.Body, conn: conn, stop: stop}
	return resp, nil
}

// connBody is an answer's body that closes its connection with it.
type connBody struct {
	body io.ReadCloser
	conn net.Conn
	stop func() bool
	once sync.Once
}

func (b *connBody) Read(p []byte) (int, error) { return b.body.Read(p) }

func (b *connBody) Close() error {
	var err error
	b.once.Do(func() {
		b.stop()
		// The connection is this body's alone: closing it first ends
		// the body without reading what the service still sends (an
		// event stream's rest, which may never end).
		err = b.conn.Close()
		_ = b.body.Close()
	})
	return err
}
