//go:build windows

package windows

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/windows"
)

// ErrLocked reports that another thread, in this process or another,
// holds the mutex.
var ErrLocked = errors.New("mutex is held by another thread")

// Mutex is a named Windows mutex held by one goroutine locked to its OS
// thread. A mutex belongs to the thread that acquired it: only that
// thread may release it, and it is abandoned (not leaked) when that thread
// or its process dies, which is what makes it an ownership lock that a
// crash cannot leave held.
type Mutex struct {
	name string
	// Abandoned says the previous holder died holding it
	// (WAIT_ABANDONED): the mutex was acquired all the same, and whatever
	// it guarded may be left in any state.
	Abandoned bool
	// Existed says the mutex object existed before this acquisition
	// (CreateMutex answered ERROR_ALREADY_EXISTS with a valid handle).
	Existed bool

	once    sync.Once
	release chan struct{}
	done    chan error
	err     error
}

// TryLockMutex acquires the mutex name without waiting, creating it with a
// security descriptor that admits only the current user. It returns
// ErrLocked when another thread holds it.
func TryLockMutex(name string) (*Mutex, error) {
	sa, err := userOnlyAttributes("GA")
	if err != nil {
		return nil, err
	}
	m := &Mutex{name: name, release: make(chan struct{}), done: make(chan error, 1)}
	acquired := make(chan error, 1)
	go m.hold(sa, acquired)
	if err := <-acquired; err != nil {
		return nil, err
	}
	return m, nil
}

// hold runs on its own locked thread for the whole life of the lock: it
// acquires, waits for Unlock, and releases from the same thread.
func (m *Mutex) hold(sa *windows.SecurityAttributes, acquired chan<- error) {
	runtime.LockOSThread()
	h, err := m.acquire(sa)
	if err != nil {
		runtime.UnlockOSThread()
		acquired <- err
		return
	}
	acquired <- nil
	<-m.release
	err = windows.ReleaseMutex(h)
	windows.CloseHandle(h)
	if err != nil {
		// The thread still owns the mutex. Leaving the goroutine
		// locked makes the runtime end the thread, which abandons the
		// mutex: the next holder gets it, told that it was abandoned.
		m.done <- &MutexError{Name: m.name, Op: "ReleaseMutex", Err: err}
		return
	}
	runtime.UnlockOSThread()
	m.done <- nil
}

func (m *Mutex) acquire(sa *windows.SecurityAttributes) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(m.name)
	if err != nil {
		return 0, &MutexError{Name: m.name, Op: "CreateMutex", Err: err}
	}
	// Not created owned: with ERROR_ALREADY_EXISTS initial ownership is
	// silently not granted, and an abandoned mutex would not say so.
	// The wait below acquires in every case and tells which.
	h, err := windows.CreateMutex(sa, false, p)
	if h == 0 {
		return 0, &MutexError{Name: m.name, Op: "CreateMutex", Err: err}
	}
	m.Existed = errors.Is(err, windows.ERROR_ALREADY_EXISTS)
	ev, err := windows.WaitForSingleObject(h, 0)
	switch ev {
	case windows.WAIT_OBJECT_0:
		return h, nil
	case windows.WAIT_ABANDONED:
		m.Abandoned = true
		return h, nil
	case uint32(windows.WAIT_TIMEOUT):
		windows.CloseHandle(h)
		return 0, ErrLocked
	}
	windows.CloseHandle(h)
	return 0, &MutexError{Name: m.name, Op: "WaitForSingleObject", Err: err}
}

// Name returns the mutex's name.
func (m *Mutex) Name() string { return m.name }

// Unlock releases the mutex on the thread that holds it and waits until it
// has. Calling it again returns the first result.
func (m *Mutex) Unlock() error {
	m.once.Do(func() {
		close(m.release)
		m.err = <-m.done
	})
	return m.err
}

// MutexError is a failure to create, wait for or release a mutex.
type MutexError struct {
	Name string
	Op   string
	Err  error
}

func (e *MutexError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Name, e.Err) }

func (e *MutexError) Unwrap() error { return e.Err }
