package windows

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/windows"
)

func testMutexName(t *testing.T) string {
	return fmt.Sprintf(`Local\tether-test-%d-%s`, os.Getpid(), t.Name())
}

// Another process holds the mutex: contention, until it releases it.
func TestMutexContentionAcrossProcesses(t *testing.T) {
	name := testMutexName(t)
	c := startChild(t, "hold-mutex", name)
	if s := c.line(t); s != "held" {
		t.Fatalf("helper: %s", s)
	}
	if _, err := TryLockMutex(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLockMutex while held elsewhere: %v, want ErrLocked", err)
	}
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	m, err := TryLockMutex(name)
	if err != nil {
		t.Fatalf("TryLockMutex after release: %v", err)
	}
	defer m.Unlock()
	if m.Abandoned {
		t.Error("a released mutex reported abandoned")
	}
}

// The holder dies by TerminateProcess: the next acquisition succeeds and
// says the mutex was abandoned; the one after that does not. A mutex
// object lives only while a handle to it is open, so the test keeps one
// across the holder's death (as a waiting contender would); without any,
// the next acquisition finds a fresh mutex and nothing to report.
func TestMutexAbandoned(t *testing.T) {
	name := testMutexName(t)
	c := startChild(t, "hold-mutex", name)
	if s := c.line(t); s != "held" {
		t.Fatalf("helper: %s", s)
	}
	np, _ := windows.UTF16PtrFromString(name)
	keep, err := windows.CreateMutex(nil, false, np)
	if keep == 0 {
		t.Fatal(err)
	}
	defer windows.CloseHandle(keep)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	m, err := TryLockMutex(name)
	if err != nil {
		t.Fatalf("TryLockMutex after the holder died: %v", err)
	}
	if !m.Abandoned || !m.Existed {
		t.Errorf("abandoned %v existed %v, want both", m.Abandoned, m.Existed)
	}
	// The object lives while another handle (this test's) keeps it: hold
	// one across the release so the next acquisition finds the same one.
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	m2, err := TryLockMutex(name)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Unlock()
	if m2.Abandoned {
		t.Error("abandoned reported twice")
	}
}

// Within one process, a second acquisition is refused too: each holder
// has a thread of its own, and a Windows mutex is recursive only for the
// thread that holds it.
func TestMutexInProcess(t *testing.T) {
	name := testMutexName(t)
	m, err := TryLockMutex(name)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != name || m.Abandoned {
		t.Errorf("name %q abandoned %v", m.Name(), m.Abandoned)
	}
	if _, err := TryLockMutex(name); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLockMutex: %v, want ErrLocked", err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(); err != nil {
		t.Fatalf("second Unlock: %v", err)
	}
	m, err = TryLockMutex(name)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	_ = m.Unlock()
}
