package windows

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/tether-dev/tether/internal/testproc"
)

// The test binary doubles as the child processes the tests need: the
// helper "helper ROLE ...".
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.EveryHelperUsed())
}

func init() { testproc.Register("helper", runHelper) }

func runHelper(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no role")
		return 2
	}
	role, args := args[0], args[1:]
	switch role {
	case "hold-mutex":
		// Holds the mutex until its stdin closes, then releases it.
		m, err := TryLockMutex(args[0])
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("held")
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := m.Unlock(); err != nil {
			fmt.Println("error", err)
			return 1
		}
		return 0
	case "job-tree":
		// Holds a kill-on-close job with a sleeper (which starts one of
		// its own) in it, and waits.
		job, err := NewJob("")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		p, err := startHelper(job, "sleeper", args[0], "fork")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		defer p.Close()
		fmt.Println("ready")
		select {}
	case "sleeper":
		// Announces itself in dir (args[0]), optionally starts one more
		// sleeper, and sleeps.
		if len(args) > 1 && args[1] == "fork" {
			cmd := testproc.Command("helper", "sleeper", args[0])
			if err := cmd.Start(); err != nil {
				return 3
			}
			go func() { _ = cmd.Wait() }()
		}
		announce(args[0], fmt.Sprintf("sleeper.%d", os.Getpid()), strconv.FormatBool(inJob()))
		select {}
	case "burner":
		// Holds burnBytes, every page written, announces itself in dir
		// (args[0]), optionally starts one more burner, and keeps a CPU
		// busy.
		mem := make([]byte, burnBytes)
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 1
		}
		if len(args) > 1 && args[1] == "fork" {
			cmd := exec.Command(os.Args[0], "helper", "burner", args[0])
			if err := cmd.Start(); err != nil {
				return 3
			}
			go func() { _ = cmd.Wait() }()
		}
		announce(args[0], fmt.Sprintf("burner.%d", os.Getpid()), "burning")
		for n := 0; ; n++ {
			mem[n%len(mem)]++
		}
	case "handles":
		// Says, for each handle value given, whether it is an inherited
		// handle here: valid and inheritable. Validity alone would not do:
		// the helper's own runtime opens handles, and one of them can take
		// the value, but none of those is inheritable. "stdout" names the
		// standard output handle.
		for _, a := range args {
			v, _ := strconv.ParseUint(a, 0, 64)
			if a == "stdout" {
				h, _ := windows.GetStdHandle(windows.STD_OUTPUT_HANDLE)
				v = uint64(h)
			}
			valid, inherit := HandleInheritable(uintptr(v))
			fmt.Printf("%s %v\n", a, valid && inherit)
		}
		return 0
	case "echo":
		// Echoes lines on the inherited duplex handle until EOF.
		v, _ := strconv.ParseUint(args[0], 0, 64)
		f, err := InheritedFile(uintptr(v), "duplex")
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fmt.Fprintf(f, "echo %s\n", sc.Text())
		}
		fmt.Println("eof", sc.Err())
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

// announce writes a file atomically, so a reader never sees it half made.
func announce(dir, name, content string) {
	p := filepath.Join(dir, name)
	_ = os.WriteFile(p+".tmp", []byte(content), 0o600)
	_ = os.Rename(p+".tmp", p)
}

func startHelper(job *Job, args ...string) (*Process, error) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	out, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return StartInJob(SpawnSpec{
		Path: testproc.Executable(), Argv: testproc.Argv("helper", args...), Env: os.Environ(),
		Stdin: null, Stdout: out, Stderr: out,
	}, job)
}

// child is a helper process started with os/exec, killed and waited for
// when the test ends.
type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := testproc.Command("helper", args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

// line reads the child's next line of output, failing the test after 20 s.
func (c *child) line(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		s, _ := c.out.ReadString('\n')
		got <- strings.TrimSpace(s)
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("no line from the helper within 20 s")
		return ""
	}
}

// waitFiles waits until dir holds n files whose names start with prefix,
// and returns their names and contents.
func waitFiles(t *testing.T, dir, prefix string, n int) map[string]string {
	t.Helper()
	var got map[string]string
	if !testproc.UntilEvery(20*time.Second, 5*time.Millisecond, func() bool {
		got = map[string]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) && !strings.HasSuffix(e.Name(), ".tmp") {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				got[e.Name()] = string(b)
			}
		}
		return len(got) >= n
	}) {
		t.Fatalf("%d of %d %q files in %s after 20 s", len(got), n, prefix, dir)
	}
	return got
}

// pidsOf returns the pids named by "<role>.<pid>" file names.
func pidsOf(t *testing.T, files map[string]string) []int {
	t.Helper()
	var out []int
	for name := range files {
		_, s, _ := strings.Cut(name, ".")
		pid, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("file %q", name)
		}
		out = append(out, pid)
	}
	return out
}

// waitDead waits until none of refs runs.
func waitDead(t *testing.T, refs []Ref, within time.Duration) {
	t.Helper()
	var alive []int
	if !testproc.UntilEvery(within, 2*time.Millisecond, func() bool {
		alive = nil
		for _, r := range refs {
			if Alive(r) {
				alive = append(alive, r.Pid)
			}
		}
		return len(alive) == 0
	}) {
		t.Fatalf("still alive after %v: %v", within, alive)
	}
}

// underWine reports whether the tests run under Wine, whose emulation
// differs from Windows in ways a test must allow for (file security
// descriptors are synthesized from Unix modes, not stored).
func underWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

var procIsProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// inJob reports whether this process runs inside a job object.
func inJob() bool {
	var in int32
	r, _, _ := procIsProcessInJob.Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&in)))
	return r != 0 && in != 0
}

// tempDir is t.TempDir with a removal that works where os.RemoveAll does
// not (see RemoveAll).
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tether-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// testJob returns an anonymous job closed (and so emptied) when the test
// ends.
func testJob(t *testing.T) *Job {
	t.Helper()
	job, err := NewJob("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	return job
}
