package windows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

const pipeWait = 10 * time.Second

var pipeSeq atomic.Int64

// testPipeName returns a pipe name no other test or run uses.
func testPipeName(t *testing.T) string {
	return fmt.Sprintf(`\\.\pipe\tether-test-%d-%d-%s`, os.Getpid(), pipeSeq.Add(1), t.Name())
}

func listenPipe(t *testing.T, name string) *PipeListener {
	t.Helper()
	l, err := ListenPipe(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dialPipe(t *testing.T, name string) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pipeWait)
	defer cancel()
	c, err := DialPipe(ctx, name, pipeWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// accept returns the next connection of l, within pipeWait.
func accept(t *testing.T, l *PipeListener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Accept: %v", r.err)
		}
		t.Cleanup(func() { r.c.Close() })
		return r.c
	case <-time.After(pipeWait):
		t.Fatal("Accept did not return")
		return nil
	}
}

func handleOf(t *testing.T, c net.Conn) windows.Handle {
	t.Helper()
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		t.Fatalf("%T has no handle", c)
	}
	return windows.Handle(f.Fd())
}

// TestPipeSecurityDescriptor reads the pipe's security descriptor back, as
// the system stored it, from both ends of a connection: owned by the
// user, a protected DACL, one entry, allowing the user.
func TestPipeSecurityDescriptor(t *testing.T) {
	name := testPipeName(t)
	l := listenPipe(t, name)
	client := dialPipe(t, name)
	server := accept(t, l)
	self, err := UserSID()
	if err != nil {
		t.Fatal(err)
	}
	for end, h := range map[string]windows.Handle{"server": handleOf(t, server), "client": handleOf(t, client)} {
		sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
		if err != nil {
			t.Fatalf("%s end: GetSecurityInfo: %v", end, err)
		}
		t.Logf("%s end: %s", end, sd)
		owner, _, err := sd.Owner()
		if err != nil || owner.String() != self {
			t.Errorf("%s end: owner %v (%v), want %s", end, owner, err, self)
		}
		control, _, err := sd.Control()
		if err != nil {
			t.Fatal(err)
		}
		if control&windows.SE_DACL_PRESENT == 0 || control&windows.SE_DACL_PROTECTED == 0 {
			t.Errorf("%s end: control %#x, want a present, protected DACL", end, control)
		}
		dacl, _, err := sd.DACL()
		if err != nil || dacl == nil {
			t.Fatalf("%s end: DACL %v, %v", end, dacl, err)
		}
		if dacl.AceCount != 1 {
			t.Fatalf("%s end: %d entries in the DACL, want 1", end, dacl.AceCount)
		}
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, 0, &ace); err != nil {
			t.Fatal(err)
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || sid.String() != self {
			t.Errorf("%s end: entry type %d for %s, want access allowed for %s", end, ace.Header.AceType, sid, self)
		}
		// GA as given, or as the system maps it for a file object
		// (FILE_ALL_ACCESS).
		const fileAllAccess = windows.STANDARD_RIGHTS_REQUIRED | windows.SYNCHRONIZE | 0x1ff
		if ace.Mask != windows.GENERIC_ALL && ace.Mask != fileAllAccess {
			t.Errorf("%s end: access mask %#x, want full access", end, ace.Mask)
		}
	}
}

// TestPipeSecondListener: a second listener on a name being served is
// refused and names the process serving it; once the first closes, the
// name is free again.
func TestPipeSecondListener(t *testing.T) {
	name := testPipeName(t)
	l := listenPipe(t, name)
	_, err := ListenPipe(name)
	if !errors.Is(err, ErrPipeInUse) {
		t.Fatalf("second ListenPipe = %v, want ErrPipeInUse", err)
	}
	var ie *PipeInUseError
	if !errors.As(err, &ie) || ie.PID != os.Getpid() || ie.Name != name {
		t.Errorf("second ListenPipe = %#v, want the name and pid %d", err, os.Getpid())
	}
	t.Log(err)

	// The first listener is unharmed. The probe that named its process
	// connected and left: the listener may hand out that connection,
	// which ends at once, before the next client's.
	c := dialPipe(t, name)
	go c.Write([]byte("ping\n"))
	var accepted []net.Conn
	for i := 0; ; i++ {
		s := accept(t, l)
		accepted = append(accepted, s)
		_ = s.SetReadDeadline(time.Now().Add(pipeWait))
		b := make([]byte, 5)
		_, err := io.ReadFull(s, b)
		if err == nil && string(b) == "ping\n" {
			break
		}
		if !errors.Is(err, io.EOF) || i > 0 {
			t.Fatalf("reading the client: %q, %v", b, err)
		}
	}

	// The name is free once the listener and every connection it
	// accepted are closed.
	l.Close()
	for _, s := range accepted {
		s.Close()
	}
	c.Close()
	l2, err := ListenPipe(name)
	if err != nil {
		t.Fatalf("ListenPipe after Close: %v", err)
	}
	l2.Close()
}

// roundTrip sends a line each way between a and b.
func roundTrip(t *testing.T, a, b net.Conn) {
	t.Helper()
	for _, p := range [][2]net.Conn{{a, b}, {b, a}} {
		if err := p[1].SetReadDeadline(time.Now().Add(pipeWait)); err != nil {
			t.Fatal(err)
		}
		msg := []byte("ping\n")
		go p[0].Write(msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(p[1], got); err != nil || string(got) != string(msg) {
			t.Fatalf("read %q, %v; want %q", got, err, msg)
		}
	}
}

// TestPipeConnections: several clients in turn and at once, each with its
// own connection, and the peer of each.
func TestPipeConnections(t *testing.T) {
	name := testPipeName(t)
	l := listenPipe(t, name)
	self, err := UserSID()
	if err != nil {
		t.Fatal(err)
	}
	var clients []net.Conn
	for range 3 {
		clients = append(clients, dialPipe(t, name))
	}
	for _, c := range clients {
		s := accept(t, l)
		roundTrip(t, c, s)
		p, err := PipeClient(s)
		if err != nil {
			t.Fatalf("PipeClient: %v", err)
		}
		if p.SID != self || p.PID != os.Getpid() {
			t.Errorf("PipeClient = %+v, want %s and pid %d", p, self, os.Getpid())
		}
		if s.LocalAddr().String() != name {
			t.Errorf("LocalAddr = %v", s.LocalAddr())
		}
	}
	// The server closes: the client reads what was written, then EOF.
	c := dialPipe(t, name)
	s := accept(t, l)
	if _, err := s.Write([]byte("bye")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_ = c.SetReadDeadline(time.Now().Add(pipeWait))
	if b, err := io.ReadAll(c); err != nil || string(b) != "bye" {
		t.Errorf("after the server closed: %q, %v; want bye and EOF", b, err)
	}

	if _, err := PipeClient(c); err == nil {
		t.Error("PipeClient of a client connection: no error")
	}
}

// TestPipeDeadline: a read with nothing to read ends at its deadline.
func TestPipeDeadline(t *testing.T) {
	name := testPipeName(t)
	l := listenPipe(t, name)
	dialPipe(t, name)
	s := accept(t, l)
	if err := s.SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}

// TestPipeClose: Close ends a pending Accept, the name goes away, and a
// second Close does nothing.
func TestPipeClose(t *testing.T) {
	name := testPipeName(t)
	l, err := ListenPipe(name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Accept start waiting; it must end either way
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
		}
	case <-time.After(pipeWait):
		t.Fatal("Accept did not return after Close")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener = %v, want net.ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pipeWait)
	defer cancel()
	if _, err := DialPipe(ctx, name, pipeWait); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DialPipe after Close = %v, want fs.ErrNotExist", err)
	}
}

// TestDialPipeBusy: with every listening instance taken and nobody
// accepting, a dial gives up after its timeout with ErrPipeBusy.
func TestDialPipeBusy(t *testing.T) {
	name := testPipeName(t)
	listenPipe(t, name)
	for range pipeBacklog {
		dialPipe(t, name)
	}
	start := time.Now()
	_, err := DialPipe(context.Background(), name, 200*time.Millisecond)
	if !errors.Is(err, ErrPipeBusy) {
		t.Fatalf("DialPipe to a busy pipe = %v, want ErrPipeBusy", err)
	}
	if d := time.Since(start); d > pipeWait {
		t.Errorf("DialPipe took %v", d)
	}
	// The caller's context ends the wait with its own error.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := DialPipe(ctx, name, pipeWait); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrPipeBusy) {
		t.Errorf("DialPipe with a short context = %v, want context.DeadlineExceeded", err)
	}
}

// TestDialForeignPipe: a pipe of the right name owned by someone else is
// refused by the client. Making another owner takes a privilege Windows
// grants only to administrators; Wine lets anyone.
func TestDialForeignPipe(t *testing.T) {
	name := testPipeName(t)
	sd, err := windows.SecurityDescriptorFromString("O:SYD:(A;;GA;;;WD)")
	if err != nil {
		t.Fatal(err)
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	name16, _ := windows.UTF16PtrFromString(name)
	h, err := windows.CreateNamedPipe(name16, windows.PIPE_ACCESS_DUPLEX|windows.FILE_FLAG_FIRST_PIPE_INSTANCE,
		windows.PIPE_TYPE_BYTE, 1, 4096, 4096, 0, sa)
	if err != nil {
		t.Skipf("cannot create a pipe owned by SYSTEM: %v", err)
	}
	defer windows.CloseHandle(h)
	ctx, cancel := context.WithTimeout(context.Background(), pipeWait)
	defer cancel()
	_, err = DialPipe(ctx, name, pipeWait)
	if !errors.Is(err, ErrForeignPipe) {
		t.Fatalf("DialPipe to a pipe owned by SYSTEM = %v, want ErrForeignPipe", err)
	}
	t.Log(err)
}

func TestDialPipeNotExist(t *testing.T) {
	name := testPipeName(t)
	_, err := DialPipe(context.Background(), name, pipeWait)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("DialPipe to no pipe = %v, want fs.ErrNotExist", err)
	}
}
