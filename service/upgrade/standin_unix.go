//go:build unix

package upgrade

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/tether-dev/tether/api"
	"golang.org/x/sys/unix"
)

// standInFD is the descriptor of the control socket in the check.
const standInFD = 3

// The messages on the control socket, each one byte, a descriptor or
// more attached to some of them.
const (
	msgServe = 's' // to the stand-in: the listener attached, the status after
	msgReady = 'r' // from it: it accepts
	msgStop  = 'x' // to the stand-in: stop accepting, hand back what you hold
	msgHeld  = 'h' // from it: connections it held, attached
	msgEnd   = 'e' // from it: nothing more held
)

// Bounds of the control socket's exchanges, and of a stand-in's end.
const (
	linkTimeout = 5 * time.Second
	// heldBatch is how many connections one message hands back: the
	// kernel takes at most 253 descriptors in one.
	heldBatch = 128
	// statusMax bounds the status a stand-in reads.
	statusMax = 64 << 20
	// finishWait is how long a stand-in that has stopped waits for the
	// statuses it is answering.
	finishWait = 2 * time.Second
)

// link is the service's end of a stand-in's control socket.
type link struct{ c *net.UnixConn }

// newLink makes a control socket: the service's end, and the file of the
// check's end, to hand it as standInFD.
func newLink() (*link, *os.File, error) {
	// Both ends close-on-exec before any fork can see them.
	syscall.ForkLock.RLock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fds[0])
		unix.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("the stand-in's control socket: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "stand-in")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("the stand-in's control socket: %w", err)
	}
	return &link{c: c.(*net.UnixConn)}, os.NewFile(uintptr(fds[1]), "stand-in"), nil
}

func (l *link) close() { _ = l.c.Close() }

// pid is the stand-in's process, for the successor to reap.
func (s *StandIn) pid() int { return s.cmd.Process.Pid }

// fd is the descriptor of the service's end, for the handover record.
func (l *link) fd() (uintptr, error) { return fdOf(l.c) }

// serve sends the listener ln and the status st, and waits until the
// stand-in accepts: the freeze that comes next takes the cores.
func (l *link) serve(ln net.Listener, st api.Status) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("the %T listener cannot be handed to a stand-in", ln)
	}
	fd, err := fdOf(sc)
	if err != nil {
		return err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_ = l.c.SetDeadline(time.Now().Add(linkTimeout))
	defer l.c.SetDeadline(time.Time{})
	if _, _, err := l.c.WriteMsgUnix([]byte{msgServe}, unix.UnixRights(int(fd)), nil); err != nil {
		return fmt.Errorf("the stand-in: %w", err)
	}
	msg := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	if _, err := l.c.Write(append(msg, b...)); err != nil {
		return fmt.Errorf("the stand-in: %w", err)
	}
	var ready [1]byte
	if n, err := l.c.Read(ready[:]); err != nil || n != 1 || ready[0] != msgReady {
		return fmt.Errorf("the stand-in did not take the listener: %d bytes, %v", n, err)
	}
	return nil
}

// recall tells the stand-in to stop, and takes what it held. The
// connections it returns are those it got, even with an error.
func (l *link) recall() (held []net.Conn, err error) {
	_ = l.c.SetDeadline(time.Now().Add(linkTimeout))
	defer l.c.SetDeadline(time.Time{})
	if _, err := l.c.Write([]byte{msgStop}); err != nil {
		return nil, fmt.Errorf("the stand-in: %w", err)
	}
	oob := make([]byte, unix.CmsgSpace(heldBatch*4))
	for {
		var b [1]byte
		n, oobn, _, _, err := l.c.ReadMsgUnix(b[:], oob)
		for _, fd := range rights(oob[:oobn]) {
			f := os.NewFile(uintptr(fd), "api")
			c, cerr := net.FileConn(f)
			f.Close()
			if cerr == nil {
				held = append(held, c)
			}
		}
		switch {
		case err != nil:
			return held, fmt.Errorf("the stand-in: %w", err)
		case n == 0:
			return held, fmt.Errorf("the stand-in: %w", io.ErrUnexpectedEOF)
		case b[0] == msgEnd:
			return held, nil
		}
	}
}

// rights returns the descriptors attached to a message.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// canStandIn says whether this check was given a control socket.
func canStandIn() bool {
	t, err := unix.GetsockoptInt(standInFD, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && t == unix.SOCK_STREAM
}

// standIn is a check that stands in, once it has answered: see StandIn.
// It writes nothing more: what it wrote to goes away with the service
// before.
func standIn(serve StatusServer) int {
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		_ = unix.Dup2(int(null.Fd()), 1)
		_ = unix.Dup2(int(null.Fd()), 2)
		null.Close()
	}
	f := os.NewFile(standInFD, "stand-in")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return 1
	}
	defer c.Close()
	return runStandIn(c.(*net.UnixConn), serve)
}

// runStandIn stands in on the control socket c.
func runStandIn(c *net.UnixConn, serve StatusServer) int {
	ln, st, err := awaitServe(c)
	if err != nil {
		// No handover, or a service gone: nothing to stand in for.
		return 0
	}
	defer ln.Close()
	r := &router{ln: ln, status: newConnQueue(), peeking: map[net.Conn]bool{}}
	serve(r.status, st)
	r.wg.Add(1)
	go r.accept()
	if _, err := c.Write([]byte{msgReady}); err != nil {
		r.stopAccepting()
		r.closeHeld()
		return 0
	}
	var b [1]byte
	n, err := c.Read(b[:])
	r.stopAccepting()
	if err == nil && n == 1 && b[0] == msgStop {
		r.handBack(c)
	} else {
		r.closeHeld()
	}
	// The server has taken its last connection (its listener is
	// closed): each is closed once answered. It is not shut down, which
	// would drop a request it had not read yet.
	ctx, cancel := context.WithTimeout(context.Background(), finishWait)
	defer cancel()
	r.status.wait(ctx)
	return 0
}

// awaitServe waits for the listener and the status, encoded as the
// API answers it.
func awaitServe(c *net.UnixConn) (*net.UnixListener, []byte, error) {
	var st []byte
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
	fds := rights(oob[:oobn])
	if err != nil || n != 1 || b[0] != msgServe || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, st, errors.New("no listener")
	}
	lf := os.NewFile(uintptr(fds[0]), "api")
	l, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, st, err
	}
	ln, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, st, fmt.Errorf("a %T listener", l)
	}
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	if err == nil {
		m := binary.BigEndian.Uint32(size[:])
		if m > statusMax {
			err = fmt.Errorf("a status of %d bytes", m)
		} else {
			st = make([]byte, m)
			_, err = io.ReadFull(c, st)
		}
	}
	if err != nil {
		ln.Close()
		return nil, st, err
	}
	return ln, st, nil
}

// router sorts what a stand-in accepts: a plain status to its server,
// every other connection held.
type router struct {
	ln     *net.UnixListener
	status *connQueue
	wg     sync.WaitGroup // accept and each connection being sorted

	mu      sync.Mutex
	stopped bool
	held    []net.Conn
	peeking map[net.Conn]bool
}

func (r *router) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			r.mu.Lock()
			stopped := r.stopped
			r.mu.Unlock()
			if stopped || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, or the like: the next may go.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		r.mu.Lock()
		if r.stopped {
			r.held = append(r.held, c)
			r.mu.Unlock()
			return
		}
		r.peeking[c] = true
		r.wg.Add(1)
		r.mu.Unlock()
		go r.sort(c)
	}
}

// sort peeks at c's request: a plain status goes to the server, anything
// else is held.
func (r *router) sort(c net.Conn) {
	defer r.wg.Done()
	status := isStatus(c)
	r.mu.Lock()
	delete(r.peeking, c)
	if !status || r.stopped {
		r.held = append(r.held, c)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	if !r.status.put(c) {
		r.mu.Lock()
		r.held = append(r.held, c)
		r.mu.Unlock()
	}
}

// statusLine is how a plain status request begins (client.Status).
const statusLine = "GET " + api.PathStatus + " HTTP/1."

// isStatus peeks at c, leaving what it sent unread: whether its first
// bytes are a plain status request's. A connection that sends nothing
// until the stand-in stops, or only part of the line, is not.
func isStatus(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [len(statusLine)]byte
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK)
		return perr != unix.EAGAIN
	})
	return err == nil && perr == nil && string(buf[:n]) == statusLine
}

// stopAccepting ends the accepting and the sorting: every connection
// not given to the server by now is held.
func (r *router) stopAccepting() {
	past := time.Unix(1, 0)
	r.mu.Lock()
	r.stopped = true
	for c := range r.peeking {
		_ = c.SetReadDeadline(past)
	}
	r.mu.Unlock()
	_ = r.ln.SetDeadline(past)
	r.wg.Wait()
	r.status.close()
}

// handBack sends every connection held over c, and closes its own.
func (r *router) handBack(c *net.UnixConn) {
	held := r.held
	r.held = nil
	_ = c.SetWriteDeadline(time.Now().Add(linkTimeout))
	for len(held) > 0 {
		batch := held[:min(heldBatch, len(held))]
		held = held[len(batch):]
		var fds []int
		for _, h := range batch {
			if fd, err := fdOf(h.(syscall.Conn)); err == nil {
				fds = append(fds, int(fd))
			}
		}
		_, _, err := c.WriteMsgUnix([]byte{msgHeld}, unix.UnixRights(fds...), nil)
		for _, h := range batch {
			h.Close()
		}
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return
		}
	}
	_, _ = c.Write([]byte{msgEnd})
}

// closeHeld closes every connection held: nobody is left to answer it.
func (r *router) closeHeld() {
	for _, h := range r.held {
		h.Close()
	}
	r.held = nil
}

// connQueue is a listener of the connections a router gives it; it
// knows which of them are still open.
type connQueue struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	open  sync.WaitGroup // connections given and not closed yet
}

func newConnQueue() *connQueue {
	return &connQueue{conns: make(chan net.Conn), done: make(chan struct{})}
}

// put gives c to Accept, and reports false once the queue is closed, or
// when nothing accepts it within linkTimeout.
func (q *connQueue) put(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	t := time.NewTimer(linkTimeout)
	defer t.Stop()
	q.open.Add(1)
	tc := &trackedConn{UnixConn: uc, closed: q.open.Done}
	select {
	case q.conns <- tc:
		return true
	case <-q.done:
	case <-t.C:
	}
	q.open.Done()
	return false
}

// wait waits until every connection given is closed, or ctx is done.
func (q *connQueue) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		q.open.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// trackedConn is a connection a connQueue gave, which says when it is
// closed.
type trackedConn struct {
	*net.UnixConn
	once   sync.Once
	closed func()
}

func (c *trackedConn) Close() error {
	err := c.UnixConn.Close()
	c.once.Do(c.closed)
	return err
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) close() { q.once.Do(func() { close(q.done) }) }

func (q *connQueue) Close() error { q.close(); return nil }

func (q *connQueue) Addr() net.Addr { return &net.UnixAddr{Net: "unix", Name: "stand-in"} }
