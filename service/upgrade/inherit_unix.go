//go:build unix

package upgrade

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// On Unix the successor is this very process after execve: the pid does
// not change, so neither the service manager nor a guardian sees
// anything happen; the service lock, the listener and the tethers are
// inherited, their close-on-exec flags cleared for the exec alone.
const Separate = false

// AttachLater: the successor serves its API before it sends attach: the
// guardians need not hear of it to go on (the pid is the same), and the
// wake-up of every guardian would delay the first answer.
const AttachLater = true

// inheritance is the service lock (held), and in a successor what it
// is to close once it serves.
type inheritance struct {
	lock *os.File
	// discard, in a successor, is what it is to close once it has
	// answered and taken the guardians over (Served).
	discard []uintptr
	// standIn, in a successor, is the control socket of the stand-in
	// answering meanwhile (Recall); zero for none.
	standIn uintptr
}

// New is the inheritance of a service that holds lock.
func New(lock *os.File) Inheritance { return &inheritance{lock: lock} }

func (in *inheritance) Lock() *os.File { return in.lock }

// fdOf returns the descriptor of c, which stays valid while c is open.
func fdOf(c syscall.Conn) (uintptr, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd uintptr
	if err := rc.Control(func(d uintptr) { fd = d }); err != nil {
		return 0, err
	}
	return fd, nil
}

// TakeOver fills in the record's descriptors, encodes it, writes it in
// memory (a memfd that the exec keeps) or else to path, and execve's
// target with the same arguments and environment, plus the record's path
// and extraEnv (the service manager's socket, which agents must not see
// and the successor must). It returns only when the exec failed: then
// nothing was inherited and the service goes on.
func (in *inheritance) TakeOver(target string, listener net.Listener, rec *Record, extraEnv []string, path string) error {
	ul, ok := listener.(*net.UnixListener)
	if !ok {
		return errors.New("the API listener is not a unix socket that can be inherited")
	}
	var err error
	if rec.Lock, err = fdOf(in.lock); err != nil {
		return fmt.Errorf("the service lock: %w", err)
	}
	lfd, err := fdOf(ul)
	if err != nil {
		return fmt.Errorf("the API listener: %w", err)
	}
	rec.Listener = []uintptr{lfd}
	if rec.standIn != nil {
		if rec.StandIn, err = rec.standIn.link.fd(); err != nil {
			return fmt.Errorf("the stand-in's control socket: %w", err)
		}
		rec.Reap = append(rec.Reap, rec.standIn.pid())
	}
	if err := eachTether(rec, func(fd uintptr) (uintptr, error) { return fd, nil }); err != nil {
		return err
	}
	// Held open (no watch closes) until the exec or its failure.
	var release func()
	rec.Discard, release = punix.HoldSlowToClose()
	defer release()
	// The binary this process runs, when an install has replaced it: the
	// exec would drop its last reference, and free the deleted file (its
	// page cache and its blocks) on its way, before the successor's first
	// instruction. Handed over, it is freed once the successor has
	// answered and taken the guardians over.
	if fd, ok := openSelf(); ok {
		defer unix.Close(fd) // only when the exec failed
		rec.Discard = append(rec.Discard, uintptr(fd))
	}
	StopAt(StepRecorded)
	rec.Steps = Steps()
	b, err := encode(rec)
	if err != nil {
		return err
	}
	// In memory (a memfd that the exec keeps) where the OS has it.
	var inMemory *os.File
	f, at, err := punix.NewMemFile(fileName, b)
	switch {
	case err == nil:
		defer f.Close()
		inMemory, path = f, at
	case !errors.Is(err, errors.ErrUnsupported):
		return fmt.Errorf("the handover record: %w", err)
	}
	if inMemory == nil {
		if err := writeRecordFile(path, b); err != nil {
			return err
		}
		defer os.Remove(path)
	}
	StopAt(StepWritten)
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, Env+"=") }),
		Env+"="+path)
	env = append(env, extraEnv...)
	argv := append([]string{target}, os.Args[1:]...)
	fds := rec.descriptors()
	if inMemory != nil {
		fds = append(fds, inMemory.Fd())
	}
	// No fork may happen while the descriptors are inheritable: a child
	// would keep the tethers open, and its guardians would not see this
	// process die (I6). os/exec takes ForkLock for reading.
	syscall.ForkLock.Lock()
	err = setCloseOnExec(fds, false)
	if err == nil {
		StopAt(StepExec)
		armBound(true)
		err = syscall.Exec(target, argv, env)
		armBound(false)
	}
	_ = setCloseOnExec(fds, true)
	syscall.ForkLock.Unlock()
	return fmt.Errorf("exec %s: %w", target, err)
}

// readRecord reads the record at path and lets go of it: it closes the
// descriptor a path in memory names, and removes a file.
func readRecord(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if fd, ok := punix.MemFileDescriptor(path); ok {
		unix.Close(fd)
		return b, err
	}
	if err == nil {
		_ = os.Remove(path)
	}
	return b, err
}

func setCloseOnExec(fds []uintptr, on bool) error {
	for _, fd := range fds {
		flags, err := unix.FcntlInt(fd, unix.F_GETFD, 0)
		if err != nil {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
		if on {
			flags |= unix.FD_CLOEXEC
		} else {
			flags &^= unix.FD_CLOEXEC
		}
		if _, err := unix.FcntlInt(fd, unix.F_SETFD, flags); err != nil {
			return fmt.Errorf("descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// Await waits until the record can be read: after execve it is there
// already.
func Await() error { return nil }

// Inherited takes the descriptors rec names, as the successor after
// execve: each is made close-on-exec again at once, so no child of this
// process ever gets one. It returns the API's listening socket apart.
func Inherited(rec *Record, socket string) (Inheritance, net.Listener, error) {
	if len(rec.Listener) != 1 {
		return nil, nil, fmt.Errorf("%w: %d listeners handed over, want one socket", ErrRecord, len(rec.Listener))
	}
	if rec.PID != os.Getpid() {
		return nil, nil, fmt.Errorf("%w: written by pid %d, and this is pid %d (not its successor)", ErrRecord, rec.PID, os.Getpid())
	}
	if err := setCloseOnExec(rec.descriptors(), true); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	lock := os.NewFile(rec.Lock, "service.lock")
	// The lock goes with the open file, which this process still has:
	// taking it again succeeds at once, and proves it.
	if err := platform.TryLock(lock); err != nil {
		return nil, nil, fmt.Errorf("the service lock handed over (descriptor %d): %w", rec.Lock, err)
	}
	lf := os.NewFile(rec.Listener[0], "api")
	l, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("the API listener handed over (descriptor %d): %w", rec.Listener[0], err)
	}
	ul, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, nil, fmt.Errorf("the API listener handed over is a %T", l)
	}
	// This service removes the socket when it stops, as the one before
	// would have.
	ul.SetUnlinkOnClose(true)
	return &inheritance{lock: lock, discard: rec.Discard, standIn: rec.StandIn}, ul, nil
}

// Recall stops the stand-in that answered meanwhile, if any, and
// returns the connections it held, their requests unread.
func (in *inheritance) Recall() ([]net.Conn, error) {
	if in.standIn == 0 {
		return nil, nil
	}
	f := os.NewFile(in.standIn, "stand-in")
	in.standIn = 0
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("the stand-in's control socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("the stand-in's control socket is a %T", c)
	}
	l := &link{c: uc}
	defer l.close()
	return l.recall()
}

// Prepared and TookOver tell the service before nothing: it is this
// process.
func (in *inheritance) Prepared() error                                    { return nil }
func (in *inheritance) TookOver([]*guardian.Session, func(string, ...any)) {}

// Served closes, in the background, what the service before held for
// itself (see Record.Discard): the API has answered by now, and the
// guardians are attached.
func (in *inheritance) Served() {
	punix.CloseLater(in.discard)
	in.discard = nil
}

// ClaimGuardian counts t's guardian, a child of this process since before
// the execve, as its own.
func ClaimGuardian(t *Tether) { guardian.ClaimChild(t.Guardian.Pid) }

// Attachment is the tether t as this process takes it over.
func Attachment(id string, t *Tether) (guardian.Attachment, error) {
	conn, err := punix.Pollable(int(t.Conn), "tether-"+id)
	if err != nil {
		return guardian.Attachment{}, err
	}
	// The guardian is a child of this process (the same one as before
	// the exec): its pid is not reused while it is not reaped.
	proc, err := guardian.ChildProcess(t.Guardian.Pid)
	if err != nil {
		conn.Close()
		return guardian.Attachment{}, err
	}
	return guardian.Attachment{Conn: conn, Proc: proc, Version: t.Version, Ready: t.Ready,
		Pending: t.Pending, Owner: platform.Self(), Later: AttachLater}, nil
}

// descriptors lists every descriptor the record hands over.
func (rec *Record) descriptors() []uintptr {
	out := append([]uintptr{rec.Lock}, rec.Listener...)
	if rec.StandIn != 0 {
		out = append(out, rec.StandIn)
	}
	out = append(out, rec.Discard...)
	return append(out, rec.Tethers...)
}

// openSelf opens the file this process runs, on Linux, where
// /proc/self/exe is that file even once its path holds another.
func openSelf() (int, bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	fd, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	return fd, err == nil
}
