package guardian

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/windows"

	"github.com/tether-dev/tether/internal/testproc"
	pwin "github.com/tether-dev/tether/platform/windows"
)

// setUpTestProcess has nothing to do on Windows: no orphan is adopted.
func setUpTestProcess() error { return nil }

func runHelper(args []string) int {
	role := args[0]
	intr := make(chan os.Signal, 1)
	switch role {
	case "polite", "sleeper":
		// Leaves on CTRL_BREAK. The leader starts a worker first,
		// which lands in the same job.
		signal.Notify(intr, os.Interrupt)
		if role == "polite" {
			spawnSelf("sleeper")
			announce("leader")
		} else {
			announce("sleeper")
		}
		<-intr
		return 0
	case "stubborn", "stubborn-worker":
		// Takes CTRL_BREAK and stays.
		signal.Notify(intr, os.Interrupt)
		go func() {
			for range intr {
			}
		}()
		if role == "stubborn" {
			spawnSelf("stubborn-worker")
			announce("leader")
		} else {
			announce("worker")
		}
		select {}
	case "exit":
		code, _ := strconv.Atoi(args[1])
		return code
	case "env":
		signal.Notify(intr, os.Interrupt)
		_ = os.WriteFile(filepath.Join(os.Getenv("HELPER_DIR"), "env"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
		announce("leader")
		<-intr
		return 0
	case "pipes":
		// Lists the pipe handles it inherited besides its standard
		// ones (its output goes to its guardian's log pipes): an agent
		// must have none.
		signal.Notify(intr, os.Interrupt)
		_ = os.WriteFile(filepath.Join(os.Getenv("HELPER_DIR"), "pipes"), []byte(fmt.Sprint(nonStdPipes())), 0o600)
		announce("leader")
		<-intr
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

func spawnSelf(role string) {
	cmd := testproc.Command("helper", role)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	go func() { _ = cmd.Wait() }()
}

// pipeHandles returns the values of this process's handles that are
// pipes. Handle values are multiples of 4; a process that inherited
// nothing unusual has few, all small.
func pipeHandles() []uintptr {
	var out []uintptr
	for h := uintptr(4); h < 1<<16; h += 4 {
		if valid, _ := pwin.HandleInheritable(h); !valid {
			continue
		}
		if t, err := windows.GetFileType(windows.Handle(h)); err == nil && t == windows.FILE_TYPE_PIPE {
			out = append(out, h)
		}
	}
	return out
}

// nonStdPipes is pipeHandles without the process's standard input,
// output and error.
func nonStdPipes() []uintptr {
	std := map[uintptr]bool{}
	for _, n := range []uint32{windows.STD_INPUT_HANDLE, windows.STD_OUTPUT_HANDLE, windows.STD_ERROR_HANDLE} {
		if h, err := windows.GetStdHandle(n); err == nil {
			std[uintptr(h)] = true
		}
	}
	out := []uintptr{}
	for _, h := range pipeHandles() {
		if !std[h] {
			out = append(out, h)
		}
	}
	return out
}

// agentPath is the PATH helper agents get.
var agentPath = "PATH=" + os.Getenv("PATH")

func refOf(pid int) (procRef, error) { return pwin.RefOf(pid) }

func isAlive(r procRef) bool { return pwin.Alive(r) }

// Orphans are not adopted on Windows: nothing to reap.
func expectAdopted(int) {}

func reapAdopted() {}

// stopOrphan ends a guardian whose owner was killed, in case it has not
// ended by itself; its job takes the tree with it.
func stopOrphan(pid int) {
	if p, err := pwin.OpenProcess(procRef{Pid: pid}); err == nil {
		_ = p.Kill()
		p.Close()
	}
}

// lockFree reports whether the identity's mutex can be taken now.
func lockFree(t *testing.T, name string) bool {
	t.Helper()
	m, err := pwin.TryLockMutex(name)
	if err != nil {
		return false
	}
	if err := m.Unlock(); err != nil {
		t.Fatal(err)
	}
	return true
}

// checkNoLeaks registers, as the last cleanup of a test, a check that it
// left no goroutine behind.
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// underWine reports whether the tests run under Wine (see the platform
// package's tests).
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
