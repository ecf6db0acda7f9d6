//go:build linux || windows

package guardian

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/wire"
)

// The test binary doubles as the guardian ("guardian"), as misbehaving
// agents ("helper ROLE") and as an owner process that can be killed
// ("owner").
func TestMain(m *testing.M) {
	testproc.Main(m, testproc.Before(setUpTestProcess), testproc.EveryHelperUsed())
}

func init() {
	testproc.Register("guardian", Main)
	testproc.Register("helper", runHelper)
	testproc.Register("owner", runOwner)
}

// Helper agents announce each process by creating "<role>.<pid>" in
// $HELPER_DIR, so tests can wait for a whole tree without sleeping.
func announce(role string) {
	dir := os.Getenv("HELPER_DIR")
	if dir == "" {
		return
	}
	name := filepath.Join(dir, fmt.Sprintf("%s.%d", role, os.Getpid()))
	_ = os.WriteFile(name+".tmp", nil, 0o600)
	_ = os.Rename(name+".tmp", name)
}

// ownerOp is one command to an owner process, one JSON line each.
type ownerOp struct {
	Op   string `json:"op"` // "start" or "stop"
	Spec Spec   `json:"spec"`
}

type ownerReply struct {
	Ready *wire.Ready `json:"ready,omitempty"`
	Code  wire.Code   `json:"code,omitempty"`
	Error string      `json:"error,omitempty"`
}

// runOwner starts sessions as told on stdin and holds them until killed.
func runOwner([]string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	sessions := map[string]*Session{}
	for in.Scan() {
		var op ownerOp
		if err := json.Unmarshal(in.Bytes(), &op); err != nil {
			fmt.Fprintln(os.Stderr, "owner:", err)
			return 1
		}
		var rep ownerReply
		switch op.Op {
		case "start":
			s, err := Start(context.Background(), op.Spec)
			if err != nil {
				rep.Error = err.Error()
				var se *StartError
				if errors.As(err, &se) {
					rep.Code = se.Code
				}
			} else {
				r := s.Ready()
				rep.Ready = &r
				sessions[op.Spec.Identity] = s
			}
		case "stop":
			if err := sessions[op.Spec.Identity].Stop(context.Background(), 0); err != nil {
				rep.Error = err.Error()
			}
		}
		b, _ := json.Marshal(rep)
		fmt.Printf("%s\n", b)
	}
	return 0
}

// world is what one test runs in: its lock dir, private root, log and
// helper dir.
type world struct {
	t      *testing.T
	dir    string
	locks  string
	priv   string
	helper string
	exe    string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := testdir.Temp(t)
	e := &world{t: t, dir: dir, locks: filepath.Join(dir, "locks"), priv: filepath.Join(dir, "private"), helper: filepath.Join(dir, "helper")}
	if err := os.MkdirAll(e.helper, 0o700); err != nil {
		t.Fatal(err)
	}
	// The guardian the code under test starts is this binary as the
	// helper "guardian".
	testproc.Used("guardian")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e.exe = exe
	checkNoLeaks(t)
	return e
}

func (e *world) spec(identity string, argv ...string) Spec {
	return Spec{
		Identity:    identity,
		Profile:     "test",
		Argv:        testproc.Argv("helper", argv...),
		Env:         []string{"HELPER_DIR=" + e.helper, agentPath},
		StopTimeout: 2 * time.Second,
		LockDir:     e.locks,
		PrivateRoot: e.priv,
		LogPath:     filepath.Join(e.dir, "agent.log"),
		Executable:  e.exe,
	}
}

// start starts a session and registers its teardown.
func (e *world) start(spec Spec) *Session {
	e.t.Helper()
	s, err := Start(context.Background(), spec)
	if err != nil {
		e.t.Fatalf("Start: %v\nlog:\n%s", err, e.log())
	}
	e.t.Cleanup(func() { stopSession(e.t, s) })
	return s
}

func stopSession(t *testing.T, s *Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Stop(ctx, 0)
	s.Close()
	for range s.Events() {
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Errorf("guardian pid %d not reaped", s.Ready().GuardianPID)
	}
}

func (e *world) log() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "agent.log"))
	return string(b)
}

// waitAnnounced waits until the helper dir holds want entries per role,
// and returns their pids by role.
func (e *world) waitAnnounced(want map[string]int) map[string][]int {
	e.t.Helper()
	var got map[string][]int
	if !testproc.Until(10*time.Second, func() bool {
		got = map[string][]int{}
		ents, _ := os.ReadDir(e.helper)
		for _, d := range ents {
			role, pidS, ok := strings.Cut(d.Name(), ".")
			if pid, err := strconv.Atoi(pidS); ok && err == nil {
				got[role] = append(got[role], pid)
			}
		}
		for role, n := range want {
			if len(got[role]) < n {
				return false
			}
		}
		return true
	}) {
		e.t.Fatalf("helpers announced %v, want %v\nlog:\n%s", got, want, e.log())
	}
	return got
}

// refs turns announced pids into references with start times.
func refs(t *testing.T, pids map[string][]int) []procRef {
	t.Helper()
	var out []procRef
	for _, ps := range pids {
		for _, pid := range ps {
			r, err := refOf(pid)
			if err != nil {
				t.Fatalf("announced pid %d: %v", pid, err)
			}
			out = append(out, r)
		}
	}
	return out
}

func alive(rs []procRef) []procRef {
	var out []procRef
	for _, r := range rs {
		if isAlive(r) {
			out = append(out, r)
		}
	}
	return out
}

// waitGone polls until none of rs lives (zombies count as dead), reaping
// any that were adopted by this process, and returns how long it took.
func waitGone(t *testing.T, rs []procRef, within time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	if !testproc.UntilEvery(within, 200*time.Microsecond, func() bool {
		reapAdopted()
		return len(alive(rs)) == 0
	}) {
		t.Fatalf("still alive after %v: %v", within, alive(rs))
	}
	return time.Since(begin)
}

func gone(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}

// privateDirs lists what is left below the private root (see Leftovers).
func (e *world) privateDirs() []string {
	left, err := Leftovers(e.priv)
	if err != nil {
		e.t.Errorf("listing %s: %v", e.priv, err)
	}
	return left
}

// owner is an owner process the test can SIGKILL.
type owner struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (e *world) newOwner() *owner {
	e.t.Helper()
	cmd := testproc.Command("owner")
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	testproc.Start(e.t, cmd)
	return &owner{t: e.t, cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (o *owner) do(op ownerOp) ownerReply {
	o.t.Helper()
	b, _ := json.Marshal(op)
	if _, err := o.in.Write(append(b, '\n')); err != nil {
		o.t.Fatal(err)
	}
	line, err := o.out.ReadBytes('\n')
	if err != nil {
		o.t.Fatalf("owner: %v", err)
	}
	var rep ownerReply
	if err := json.Unmarshal(line, &rep); err != nil {
		o.t.Fatal(err)
	}
	return rep
}

// start starts spec in the owner process and registers cleanup of the
// guardian it will leave behind when the owner is killed.
func (o *owner) start(spec Spec) *wire.Ready {
	o.t.Helper()
	rep := o.do(ownerOp{Op: "start", Spec: spec})
	if rep.Ready == nil {
		o.t.Fatalf("owner start: %s", rep.Error)
	}
	g := rep.Ready.GuardianPID
	expectAdopted(g)
	o.t.Cleanup(func() {
		stopOrphan(g)
		gref := procRef{Pid: g}
		if r, err := refOf(g); err == nil {
			gref = r
		}
		waitGone(o.t, []procRef{gref}, 10*time.Second)
	})
	return rep.Ready
}

func (o *owner) kill() {
	o.t.Helper()
	if err := o.cmd.Process.Kill(); err != nil {
		o.t.Fatal(err)
	}
	_ = o.cmd.Wait()
}
