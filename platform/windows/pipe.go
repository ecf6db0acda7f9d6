//go:build windows

package windows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	winio "github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// ErrPipeInUse reports that another process already serves a pipe name.
var ErrPipeInUse = errors.New("named pipe is in use by another process")

// ErrPipeBusy reports a pipe whose every instance stayed connected to
// other clients until the dial gave up: its server is not accepting.
var ErrPipeBusy = errors.New("named pipe is busy: its server is not accepting connections")

// ErrForeignPipe reports a pipe created by another user: someone claimed
// the name before the service did, and a client must not talk to it.
var ErrForeignPipe = errors.New("named pipe belongs to another user")

// PipeInUseError is the error of ListenPipe when another process serves
// the name. It matches ErrPipeInUse.
type PipeInUseError struct {
	Name string
	PID  int // the process serving Name, or 0 when it cannot be told
}

func (e *PipeInUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s: %v (pid %d)", e.Name, ErrPipeInUse, e.PID)
	}
	return fmt.Sprintf("%s: %v", e.Name, ErrPipeInUse)
}

func (e *PipeInUseError) Unwrap() error { return ErrPipeInUse }

// pipeBufferSize is the pipe's buffer each way: an answer, or the rest of
// a request the server will not read, fits without blocking the writer.
const pipeBufferSize = 64 << 10

// pipeBacklog is how many instances of the pipe listen at once: clients
// that arrive together connect without waiting for Accept, as with a
// socket's listen backlog.
const pipeBacklog = 4

// PipeListener accepts connections on a named pipe that only the current
// user can open. It is a net.Listener; its connections report who opened
// them through PipeClient.
//
// It does not use go-winio's listener, which keeps a reserved first
// instance opened without read or write access: Windows leaves such an
// instance unconnectable, but Wine lets a client connect to it, where
// nothing ever reads. Here every instance is one that Accept serves, and
// some always listen, so the name is never free between two connections
// for another process to claim.
type PipeListener struct {
	name   string
	name16 *uint16
	sa     *windows.SecurityAttributes
	quit   windows.Handle // manual-reset event, set by Close
	// wake is a manual-reset event set by a deadline in the past: Accept
	// returns a timeout without closing anything (a pause, SetDeadline).
	wake windows.Handle

	mu        sync.Mutex      // held by Accept while it waits, and by Close
	listening []*pipeInstance // nil once closed
	once      sync.Once
}

// pipeInstance is an instance of the pipe waiting for a client.
type pipeInstance struct {
	h  windows.Handle
	ov windows.Overlapped // of its ConnectNamedPipe; HEvent is signalled when a client connects
	// pending: the ConnectNamedPipe is in flight, and the system writes
	// to ov until it is over. Otherwise a client had connected before
	// the call, and ov was never the system's.
	pending bool
}

// ListenPipe listens on the named pipe name (\\.\pipe\...), reachable by
// the current user only (I5): its security descriptor is owned by the
// user and has a protected DACL with a single entry, the user's SID with
// full access, so neither other users nor inherited defaults get in. The
// pipe refuses remote clients.
//
// A name another process serves is refused with a *PipeInUseError naming
// that process when it answers. Windows refuses the first instance itself
// (FILE_FLAG_FIRST_PIPE_INSTANCE); Wine ignores that flag, so the count
// of instances is checked as well.
func ListenPipe(name string) (_ *PipeListener, err error) {
	l, err := newPipeListener(name)
	if err != nil {
		return nil, err
	}
	first, err := l.create(true)
	if errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_PIPE_BUSY) {
		return nil, &PipeInUseError{Name: name, PID: pipeServerPID(name)}
	}
	if err != nil {
		return nil, err
	}
	var instances uint32
	err = windows.GetNamedPipeHandleState(first.h, nil, &instances, nil, nil, nil, 0)
	if err != nil || instances > 1 {
		first.close()
		if err != nil {
			return nil, &os.PathError{Op: "GetNamedPipeHandleState", Path: name, Err: err}
		}
		return nil, &PipeInUseError{Name: name, PID: pipeServerPID(name)}
	}
	l.listening = []*pipeInstance{first}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if err := l.events(); err != nil {
		return nil, err
	}
	if err := first.listen(); err != nil {
		return nil, &os.PathError{Op: "ConnectNamedPipe", Path: name, Err: err}
	}
	for len(l.listening) < pipeBacklog {
		in, err := l.create(false)
		if err != nil {
			return nil, err
		}
		l.listening = append(l.listening, in)
		if err := in.listen(); err != nil {
			return nil, &os.PathError{Op: "ConnectNamedPipe", Path: name, Err: err}
		}
	}
	return l, nil
}

// create creates an instance of the pipe; first asks for the one that
// creates the pipe itself.
func (l *PipeListener) create(first bool) (*pipeInstance, error) {
	mode := uint32(windows.PIPE_ACCESS_DUPLEX | windows.FILE_FLAG_OVERLAPPED)
	if first {
		mode |= windows.FILE_FLAG_FIRST_PIPE_INSTANCE
	}
	h, err := windows.CreateNamedPipe(l.name16, mode,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|windows.PIPE_REJECT_REMOTE_CLIENTS,
		windows.PIPE_UNLIMITED_INSTANCES, pipeBufferSize, pipeBufferSize, 0, l.sa)
	if err != nil {
		return nil, &os.PathError{Op: "CreateNamedPipe", Path: l.name, Err: err}
	}
	ev, err := windows.CreateEvent(nil, 1, 0, nil)
	if err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("listening on %s: %w", l.name, err)
	}
	in := &pipeInstance{h: h}
	in.ov.HEvent = ev
	return in, nil
}

// listen starts waiting for a client. The instance is not tied to
// go-winio's completion port until it is handed over, so the wait ends
// with its event.
func (in *pipeInstance) listen() error {
	for {
		if err := windows.ResetEvent(in.ov.HEvent); err != nil {
			return err
		}
		err := windows.ConnectNamedPipe(in.h, &in.ov)
		switch {
		case errors.Is(err, windows.ERROR_IO_PENDING):
			in.pending = true
			return nil
		case err == nil, errors.Is(err, windows.ERROR_PIPE_CONNECTED):
			// Connected already: the system signals no event for it.
			return windows.SetEvent(in.ov.HEvent)
		case errors.Is(err, windows.ERROR_NO_DATA):
			// A client connected and left before the call.
			_ = windows.DisconnectNamedPipe(in.h)
			continue
		}
		return err
	}
}

// close ends the instance's wait, if any, and closes it.
func (in *pipeInstance) close() {
	if in.pending {
		_ = windows.CancelIoEx(in.h, &in.ov)
		var n uint32
		_ = windows.GetOverlappedResult(in.h, &in.ov, &n, true)
	}
	windows.CloseHandle(in.h)
	windows.CloseHandle(in.ov.HEvent)
}

// Accept waits for a client and returns its connection.
func (l *PipeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.listening == nil {
			return nil, l.opError(net.ErrClosed)
		}
		events := []windows.Handle{l.quit, l.wake}
		for _, in := range l.listening {
			events = append(events, in.ov.HEvent)
		}
		w, err := windows.WaitForMultipleObjects(events, false, windows.INFINITE)
		if err != nil {
			return nil, l.opError(err)
		}
		i := int(w - windows.WAIT_OBJECT_0)
		if i == 1 {
			return nil, l.opError(os.ErrDeadlineExceeded)
		}
		if i == 0 || i >= len(events) {
			return nil, l.opError(net.ErrClosed)
		}
		in := l.listening[i-2]
		if in.pending {
			// Its event is signalled: the operation is over.
			var n uint32
			err = windows.GetOverlappedResult(in.h, &in.ov, &n, false)
			in.pending = false
		}
		if err != nil {
			// The connection failed before it was accepted: wait
			// for another client on the same instance.
			_ = windows.DisconnectNamedPipe(in.h)
			if err := in.listen(); err != nil {
				return nil, l.opError(err)
			}
			continue
		}
		// Another instance listens in its place before it is handed
		// over.
		next, err := l.create(false)
		if err == nil {
			if err = next.listen(); err != nil {
				next.close()
			}
		}
		if err != nil {
			_ = windows.DisconnectNamedPipe(in.h)
			_ = in.listen()
			return nil, l.opError(err)
		}
		l.listening[i-2] = next
		windows.CloseHandle(in.ov.HEvent)
		// go-winio's file gives the connection overlapped I/O with
		// deadlines, completed on its I/O completion port.
		f, err := winio.NewOpenFile(in.h)
		if err != nil {
			windows.CloseHandle(in.h)
			return nil, l.opError(err)
		}
		return &pipeConn{pipeFile: f.(pipeFile), addr: pipeAddr(l.name)}, nil
	}
}

// Close stops listening: a pending Accept returns net.ErrClosed, clients
// connected but not accepted are dropped, and the pipe name goes away once
// the connections already accepted are closed. Calling it again does
// nothing.
func (l *PipeListener) Close() error {
	l.once.Do(func() {
		if l.quit != 0 {
			_ = windows.SetEvent(l.quit)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, in := range l.listening {
			in.close()
		}
		l.listening = nil
		for _, h := range []windows.Handle{l.quit, l.wake} {
			if h != 0 {
				windows.CloseHandle(h)
			}
		}
	})
	return nil
}

// Addr returns the pipe's name.
func (l *PipeListener) Addr() net.Addr { return pipeAddr(l.name) }

func (l *PipeListener) opError(err error) error {
	return &net.OpError{Op: "accept", Net: "pipe", Addr: pipeAddr(l.name), Err: err}
}

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }

// pipeFile is what go-winio's NewOpenFile returns beyond io.ReadWriteCloser.
type pipeFile interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	Fd() uintptr
}

// pipeConn is the server end of one connection.
type pipeConn struct {
	pipeFile
	addr pipeAddr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.addr }
func (c *pipeConn) RemoteAddr() net.Addr { return c.addr }

func (c *pipeConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// PipePeer is who opened the client end of a pipe connection.
type PipePeer struct {
	SID string // the user of the client's token
	PID int    // the client's process id, or 0 when it cannot be told
}

// PipeClient returns who is at the other end of c, a connection from a
// PipeListener. The SID comes from the token the client presented when it
// opened the pipe (ImpersonateNamedPipeClient), not from its process id,
// which may be reused; the pid is for messages. The client must have
// opened the pipe at identification level at least, as DialPipe does:
// at the anonymous level Windows gives the server an anonymous token.
func PipeClient(c net.Conn) (PipePeer, error) {
	pc, ok := c.(*pipeConn)
	if !ok {
		return PipePeer{}, fmt.Errorf("%T is not a connection from a pipe listener", c)
	}
	h := windows.Handle(pc.Fd())
	var p PipePeer
	var pid uint32
	if windows.GetNamedPipeClientProcessId(h, &pid) == nil {
		p.PID = int(pid)
	}
	sid, err := clientSID(h)
	if err != nil {
		return p, fmt.Errorf("reading the token of the client of %s: %w", pc.addr, err)
	}
	p.SID = sid
	return p, nil
}

var procImpersonateNamedPipeClient = windows.NewLazySystemDLL("advapi32.dll").NewProc("ImpersonateNamedPipeClient")

// clientSID reads the user of the client's token by impersonating the
// client on a thread of its own. Impersonation belongs to the OS thread:
// the goroutine keeps its thread locked, and when it cannot revert, it
// ends locked, so the runtime retires the thread rather than let another
// goroutine run as the client.
func clientSID(h windows.Handle) (string, error) {
	type result struct {
		sid string
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if r, _, err := procImpersonateNamedPipeClient.Call(uintptr(h)); r == 0 {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("ImpersonateNamedPipeClient: %w", err)}
			return
		}
		var tok windows.Token
		// openAsSelf: the thread's access to its own token is checked
		// as the service, since an identification-level token may not
		// open objects.
		err := windows.OpenThreadToken(windows.CurrentThread(), windows.TOKEN_QUERY, true, &tok)
		if rerr := windows.RevertToSelf(); rerr != nil {
			if err == nil {
				tok.Close()
			}
			done <- result{err: fmt.Errorf("RevertToSelf: %w", rerr)}
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			done <- result{err: fmt.Errorf("OpenThreadToken: %w", err)}
			return
		}
		defer tok.Close()
		u, err := tok.GetTokenUser()
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{sid: u.User.Sid.String()}
	}()
	r := <-done
	return r.sid, r.err
}

// DialPipe connects to the named pipe name. While every instance is busy
// it retries until ctx is done or timeout has passed, and then returns
// ctx's error or ErrPipeBusy. A name nobody serves is an error matching
// fs.ErrNotExist.
//
// The client opens the pipe at identification level, so that the server
// can tell who it is (PipeClient) but cannot act as it. It then checks
// that the pipe is owned by its own user, and refuses with ErrForeignPipe
// a pipe that someone else created under the name.
func DialPipe(ctx context.Context, name string, timeout time.Duration) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := winio.DialPipeAccessImpLevel(dctx, name, windows.GENERIC_READ|windows.GENERIC_WRITE, winio.PipeImpLevelIdentification)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = &os.PathError{Op: "dial", Path: name, Err: fmt.Errorf("%w (waited %v)", ErrPipeBusy, timeout)}
		}
		return nil, err
	}
	if err := checkPipeOwner(c, name); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkPipeOwner makes sure the pipe at the other end of c, a client
// connection, is owned by the current user. An unprivileged process
// cannot make another user the owner of what it creates.
func checkPipeOwner(c net.Conn, name string) error {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return fmt.Errorf("%T has no handle", c)
	}
	owner, err := handleOwner(windows.Handle(f.Fd()))
	if err != nil {
		return &os.PathError{Op: "dial", Path: name, Err: err}
	}
	self, err := UserSID()
	if err != nil {
		return err
	}
	if owner != self {
		return &os.PathError{Op: "dial", Path: name, Err: fmt.Errorf("%w: owned by %s, not %s", ErrForeignPipe, owner, self)}
	}
	return nil
}

// handleOwner returns the owner SID of the object of h.
func handleOwner(h windows.Handle) (string, error) {
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", fmt.Errorf("reading the pipe's owner: %w", err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return "", fmt.Errorf("reading the pipe's owner: %w", err)
	}
	return owner.String(), nil
}

// pipeServerPID returns the process serving the pipe name, or 0 when it
// does not answer within a moment.
func pipeServerPID(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := winio.DialPipeAccessImpLevel(ctx, name, windows.GENERIC_READ|windows.GENERIC_WRITE, winio.PipeImpLevelIdentification)
	if err != nil {
		return 0
	}
	defer c.Close()
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return 0
	}
	var pid uint32
	if windows.GetNamedPipeServerProcessId(windows.Handle(f.Fd()), &pid) != nil {
		return 0
	}
	return int(pid)
}

// newPipeListener is a listener of name with its security attributes and
// no instance yet.
func newPipeListener(name string) (*PipeListener, error) {
	sa, err := userOnlyAttributes("GA")
	if err != nil {
		return nil, err
	}
	name16, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "listen", Path: name, Err: err}
	}
	return &PipeListener{name: name, name16: name16, sa: sa}, nil
}

// events makes the listener's quit and wake events.
func (l *PipeListener) events() error {
	var err error
	if l.quit, err = windows.CreateEvent(nil, 1, 0, nil); err != nil {
		return fmt.Errorf("listening on %s: %w", l.name, err)
	}
	if l.wake, err = windows.CreateEvent(nil, 1, 0, nil); err != nil {
		return fmt.Errorf("listening on %s: %w", l.name, err)
	}
	return nil
}

// SetDeadline with a time in the past makes a waiting or later Accept
// return a timeout error, without closing anything: the instances go on
// listening, and clients that connect meanwhile wait to be accepted. The
// zero time lets Accept wait again. (Other times count as the zero time:
// only a pause is needed.)
func (l *PipeListener) SetDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		return windows.SetEvent(l.wake)
	}
	return windows.ResetEvent(l.wake)
}

// Handover gives the listening instances of the pipe to the process to
// (a handle with PROCESS_DUP_HANDLE): each instance's wait for a client is
// ended here (the instance goes on listening: a client may connect, and
// waits) and its handle duplicated into to. It returns the handles' values
// there, for AdoptPipeListener. The listener is closed then, this
// process's handles with it; the instances live on in to. Undo, if to
// never takes them, puts them back to listening here.
func (l *PipeListener) Handover(to windows.Handle) ([]uintptr, error) {
	_ = l.SetDeadline(time.Unix(1, 0))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.listening == nil {
		return nil, l.opError(net.ErrClosed)
	}
	var out []uintptr
	for _, in := range l.listening {
		if in.pending {
			_ = windows.CancelIoEx(in.h, &in.ov)
			var n uint32
			_ = windows.GetOverlappedResult(in.h, &in.ov, &n, true)
			in.pending = false
		}
		var dup windows.Handle
		if err := windows.DuplicateHandle(windows.CurrentProcess(), in.h, to, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
			return nil, fmt.Errorf("handing %s over: %w", l.name, err)
		}
		out = append(out, uintptr(dup))
	}
	return out, nil
}

// Undo listens again on the instances of a Handover whose successor did
// not take them (it was killed, or never said it had).
func (l *PipeListener) Undo() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, in := range l.listening {
		if !in.pending {
			if err := in.listen(); err != nil {
				return err
			}
		}
	}
	return l.SetDeadline(time.Time{})
}

// AdoptPipeListener listens on the instances of name that another process
// handed over (Handover): handles are their values in this process. A
// client that connected to one meanwhile is accepted first.
func AdoptPipeListener(name string, handles []uintptr) (*PipeListener, error) {
	l, err := newPipeListener(name)
	if err != nil {
		return nil, err
	}
	if err := l.events(); err != nil {
		return nil, err
	}
	for _, h := range handles {
		ev, err := windows.CreateEvent(nil, 1, 0, nil)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("listening on %s: %w", name, err)
		}
		in := &pipeInstance{h: windows.Handle(h)}
		in.ov.HEvent = ev
		l.listening = append(l.listening, in)
		if err := in.listen(); err != nil {
			l.Close()
			return nil, &os.PathError{Op: "ConnectNamedPipe", Path: name, Err: err}
		}
	}
	if len(l.listening) == 0 {
		l.Close()
		return nil, fmt.Errorf("listening on %s: no instance handed over", name)
	}
	return l, nil
}
