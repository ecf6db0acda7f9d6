package windows

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/tether-dev/tether/internal/testproc"
)

var errTest = errors.New("test error")

func isJobExists(err error) bool { return errors.Is(err, ErrJobExists) }

// A process started in a job inherits its standard handles and nothing
// else, not even a handle marked inheritable. The helper's own standard
// output shows it sees an inherited handle when there is one.
func TestStartInJobInheritsOnlyStandardHandles(t *testing.T) {
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), InheritHandle: 1}
	ev, err := windows.CreateEvent(sa, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(ev)
	if valid, inherit := HandleInheritable(uintptr(ev)); !valid || !inherit {
		t.Fatalf("event handle valid %v inheritable %v", valid, inherit)
	}
	job := testJob(t)
	outPath := filepath.Join(tempDir(t), "out")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	arg := fmt.Sprintf("%#x", uintptr(ev))
	p, err := StartInJob(SpawnSpec{
		Path: testproc.Executable(), Argv: testproc.Argv("helper", "handles", "stdout", arg), Env: os.Environ(),
		Stdin: null, Stdout: out, Stderr: out,
	}, job)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	select {
	case <-p.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("helper did not exit")
	}
	b, _ := os.ReadFile(outPath)
	if got, want := strings.TrimSpace(string(b)), "stdout true\n"+arg+" false"; got != want {
		t.Fatalf("helper said %q, want %q", got, want)
	}
}

// A command that does not exist fails to start and leaves the job empty.
func TestStartInJobMissingCommand(t *testing.T) {
	job := testJob(t)
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	missing := filepath.Join(tempDir(t), "missing.exe")
	_, err := StartInJob(SpawnSpec{Path: missing, Argv: []string{missing}, Stdin: null, Stdout: null, Stderr: null}, job)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want one matching os.ErrNotExist", err)
	}
	if n, _ := job.Active(); n != 0 {
		t.Errorf("%d processes in the job", n)
	}
}

func TestRefAndAlive(t *testing.T) {
	r, err := RefOf(os.Getpid())
	if err != nil || r.Start == 0 {
		t.Fatalf("RefOf(self): %+v %v", r, err)
	}
	if !Alive(r) {
		t.Fatal("self not alive")
	}
	if Alive(Ref{Pid: r.Pid, Start: r.Start + 1}) {
		t.Fatal("a reference with another start time is alive")
	}
}
