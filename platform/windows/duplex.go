//go:build windows

package windows

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ChildHandle is a handle made to be inherited by one child process: its
// value goes on the child's command line and into the handle list of its
// start (os/exec's SysProcAttr.AdditionalInheritedHandles). Close it once
// the child has started.
type ChildHandle struct {
	h windows.Handle
}

// Value returns the handle's value, the same in the child that inherits it.
func (c *ChildHandle) Value() uintptr { return uintptr(c.h) }

// Close closes this process's copy.
func (c *ChildHandle) Close() error {
	if c.h == 0 {
		return nil
	}
	err := windows.CloseHandle(c.h)
	c.h = 0
	return err
}

// DuplexPair returns the two ends of a new duplex byte pipe, the Windows
// counterpart of a socket pair: this process's end as a pollable
// *os.File (overlapped I/O, so deadlines work and a read wakes for
// nothing but data or EOF), and the other end as an inheritable handle
// for one child. Either side sees EOF once every handle of the other end
// is closed, which happens when its process dies however it dies.
//
// Anonymous pipes are one-way, so this is a named pipe with a random name
// under prefix, one instance only, local clients only, and a security
// descriptor that admits the current user alone; it is connected before
// DuplexPair returns, so nobody else can connect to it.
func DuplexPair(prefix string) (own *os.File, child *ChildHandle, err error) {
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, nil, err
	}
	name := `\\.\pipe\` + prefix + "-" + hex.EncodeToString(rnd[:])
	np, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, nil, err
	}
	sa, err := userOnlyAttributes("GA")
	if err != nil {
		return nil, nil, err
	}
	const bufSize = 64 << 10
	server, err := windows.CreateNamedPipe(np,
		windows.PIPE_ACCESS_DUPLEX|windows.FILE_FLAG_OVERLAPPED|windows.FILE_FLAG_FIRST_PIPE_INSTANCE,
		windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT|windows.PIPE_REJECT_REMOTE_CLIENTS,
		1, bufSize, bufSize, 0, sa)
	if err != nil {
		return nil, nil, fmt.Errorf("CreateNamedPipe %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			windows.CloseHandle(server)
		}
	}()
	inherit := *sa
	inherit.InheritHandle = 1
	client, err := windows.CreateFile(np, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, &inherit,
		windows.OPEN_EXISTING, windows.FILE_FLAG_OVERLAPPED|windows.SECURITY_SQOS_PRESENT|windows.SECURITY_IDENTIFICATION, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening %s: %w", name, err)
	}
	// The client is already there: ConnectNamedPipe says so with
	// ERROR_PIPE_CONNECTED, which is success. With an overlapped handle
	// it could also answer ERROR_IO_PENDING, which cannot happen once
	// the client has connected; wait all the same rather than assume.
	ov := windows.Overlapped{}
	if ov.HEvent, err = windows.CreateEvent(nil, 1, 0, nil); err != nil {
		windows.CloseHandle(client)
		return nil, nil, err
	}
	defer windows.CloseHandle(ov.HEvent)
	err = windows.ConnectNamedPipe(server, &ov)
	if errors.Is(err, windows.ERROR_IO_PENDING) {
		var n uint32
		err = windows.GetOverlappedResult(server, &ov, &n, true)
	}
	if err != nil && !errors.Is(err, windows.ERROR_PIPE_CONNECTED) {
		windows.CloseHandle(client)
		return nil, nil, fmt.Errorf("connecting %s: %w", name, err)
	}
	return os.NewFile(uintptr(server), name), &ChildHandle{h: client}, nil
}

// InheritedFile turns a handle this process inherited into a pollable
// *os.File, first making it non-inheritable so that no process started
// from here gets it (the Windows counterpart of close-on-exec). It fails
// unless the handle is a pipe.
func InheritedFile(h uintptr, name string) (*os.File, error) {
	wh := windows.Handle(h)
	t, err := windows.GetFileType(wh)
	if err != nil {
		return nil, fmt.Errorf("handle %#x: %w", h, err)
	}
	if t != windows.FILE_TYPE_PIPE {
		return nil, fmt.Errorf("handle %#x is not a pipe (file type %d)", h, t)
	}
	if err := windows.SetHandleInformation(wh, windows.HANDLE_FLAG_INHERIT, 0); err != nil {
		return nil, fmt.Errorf("handle %#x: clearing its inherit flag: %w", h, err)
	}
	return os.NewFile(h, name), nil
}

// HandleInheritable reports whether h is a valid handle of this process
// with its inherit flag set.
func HandleInheritable(h uintptr) (valid, inheritable bool) {
	var flags uint32
	r, _, _ := procGetHandleInformation.Call(h, uintptr(unsafe.Pointer(&flags)))
	if r == 0 {
		return false, false
	}
	return true, flags&windows.HANDLE_FLAG_INHERIT != 0
}

var procGetHandleInformation = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetHandleInformation")
