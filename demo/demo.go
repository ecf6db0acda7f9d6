//go:build unix

package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/platform"
	punix "github.com/tether-dev/tether/platform/unix"
)

// The demo agent's id and identity, as in the embedded default config.
const (
	agentID  = "demo"
	identity = "demo@local"
)

// Run runs the demo and returns the exit code.
func Run(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: tether demo")
		return 2
	}
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tether demo: FAILED:", err)
		return 1
	}
	return 0
}

type sandbox struct {
	dir      string
	exe      string
	environ  []string
	services map[string]*exec.Cmd
	say      func(format string, args ...any)
}

func run(out io.Writer) (err error) {
	// Adopt orphaned guardians so they are reaped here, not left as
	// zombies under an init that does not reap.
	_, _ = punix.BecomeSubreaper()
	e, err := newEnv(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := e.cleanup(); err == nil {
			err = cerr
		}
	}()
	e.say("tether demo: crash survival, in %s", e.dir)
	e.say("")
	a, members, err := e.startFirst()
	if err != nil {
		return err
	}
	if err := e.killService(a, members); err != nil {
		return err
	}
	a2, err := e.relaunch()
	if err != nil {
		return err
	}
	if err := e.secondProfile(a2); err != nil {
		return err
	}
	if err := e.stopBoth(a2); err != nil {
		return err
	}
	e.say("")
	e.say("ok: one identity ran exactly once at a time, and nothing was left behind.")
	return nil
}

// newEnv makes the demo's world in a temp dir: its own XDG config, state
// and runtime directories, in an environment without the user's XDG_*.
func newEnv(out io.Writer) (_ *sandbox, err error) {
	dir, err := os.MkdirTemp("", "tether-demo-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	e := &sandbox{dir: dir, exe: exe, services: map[string]*exec.Cmd{},
		say: func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") {
			e.environ = append(e.environ, kv)
		}
	}
	for _, d := range []string{"config", "state", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	e.environ = append(e.environ,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	return e, nil
}

// startFirst is step 1: the service with the demo agent, whose tree it
// shows.
func (e *sandbox) startFirst() (api.Agent, []punix.Proc, error) {
	e.say("1. Start the service (profile \"demo\") with the built-in demo agent: it starts a worker in")
	e.say("   its own process group and a double-forked escapee in its own session.")
	svc, err := e.startService("demo")
	if err != nil {
		return api.Agent{}, nil, err
	}
	a, err := e.waitRunning("demo")
	if err != nil {
		return api.Agent{}, nil, err
	}
	e.say("   service pid %d -> guardian pid %d -> agent pid %d (identity %q)", svc.Process.Pid, a.GuardianPID, a.PID, a.Identity)
	tree := &punix.Tree{Leader: punix.Ref{Pid: a.PID}, Root: a.GuardianPID}
	members, err := waitTree(tree, a.PID, 10*time.Second)
	if err != nil {
		return api.Agent{}, nil, err
	}
	for _, p := range members {
		e.say("   %s", describe(p, a.PID))
	}
	e.say("")
	return a, members, nil
}

// killService is step 2: SIGKILL the service and time the teardown.
func (e *sandbox) killService(a api.Agent, members []punix.Proc) error {
	e.say("2. SIGKILL the service (pid %d). Nothing tells the guardian but EOF on its tether.", e.services["demo"].Process.Pid)
	took, err := e.killAndMeasure("demo", a, members)
	if err != nil {
		return err
	}
	e.say("   tree gone, private dir removed and lock free after %.1f ms", float64(took.Microseconds())/1000)
	if line := lastLogLine(filepath.Join(e.dir, "state", "tether", "demo", "logs", agentID+".log"), "stopped (owner_lost)"); line != "" {
		e.say("   the guardian's log: %s", line)
	}
	e.say("")
	return nil
}

// relaunch is step 3: the agent comes back, exactly once.
func (e *sandbox) relaunch() (api.Agent, error) {
	e.say("3. Relaunch the service: the agent was enabled, so it comes back, exactly once.")
	svc, err := e.startService("demo")
	if err != nil {
		return api.Agent{}, err
	}
	a, err := e.waitRunning("demo")
	if err != nil {
		return api.Agent{}, err
	}
	n, err := treesOf(a.PID)
	if err != nil {
		return api.Agent{}, err
	}
	e.say("   service pid %d, agent pid %d; live trees of %q: %d", svc.Process.Pid, a.PID, identity, n)
	e.say("")
	return a, nil
}

// secondProfile is step 4: another profile is refused the same identity.
func (e *sandbox) secondProfile(a api.Agent) error {
	e.say("4. A second profile (\"other\") on the same identity: tether --profile other start %s", agentID)
	if _, err := e.startService("other"); err != nil {
		return err
	}
	if _, err := e.client("other").Status(context.Background()); err != nil {
		return err
	}
	code, msg := e.cli("--profile", "other", "start", agentID)
	if code != 4 {
		return fmt.Errorf("the second profile's start exited %d, want 4 (contention): %s", code, msg)
	}
	e.say("   exit %d (contention): %s", code, strings.TrimSpace(msg))
	if n, err := treesOf(a.PID); err != nil || n != 1 {
		return fmt.Errorf("%d trees of %q after the second profile tried (%v)", n, identity, err)
	}
	e.say("")
	return nil
}

// stopBoth is step 5: both services quit, and the tree goes with them.
func (e *sandbox) stopBoth(a api.Agent) error {
	e.say("5. Stop both services: every agent stops, nothing is left behind.")
	for _, p := range []string{"other", "demo"} {
		if err := e.quit(p); err != nil {
			return err
		}
	}
	_, err := waitGone(&punix.Tree{Leader: punix.Ref{Pid: a.PID}, Root: a.GuardianPID}, 10*time.Second)
	return err
}

func (e *sandbox) client(profile string) *client.Client {
	return client.New(filepath.Join(e.dir, "run", "tether", profile+".sock"))
}

// startService runs "tether --profile P service run" in the demo's world.
func (e *sandbox) startService(profile string) (*exec.Cmd, error) {
	cmd := exec.Command(e.exe, "--profile", profile, "service", "run")
	cmd.Env = e.environ
	logf, err := os.OpenFile(filepath.Join(e.dir, "service-"+profile+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	e.services[profile] = cmd
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.client(profile).Status(context.Background()); err == nil {
			return cmd, nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(e.dir, "service-"+profile+".log"))
			return nil, fmt.Errorf("the service of profile %q did not come up:\n%s", profile, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *sandbox) waitRunning(profile string) (api.Agent, error) {
	deadline := time.Now().Add(15 * time.Second)
	var last api.Status
	for {
		st, err := e.client(profile).Status(context.Background())
		if err == nil {
			last = st
			for _, a := range st.Agents {
				if a.ID == agentID && a.State == api.StateRunning {
					return a, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return api.Agent{}, fmt.Errorf("agent %q of profile %q is not running: %+v", agentID, profile, last.Agents)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cli runs the tether command line in the demo's world.
func (e *sandbox) cli(args ...string) (int, string) {
	cmd := exec.Command(e.exe, args...)
	cmd.Env = e.environ
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1, err.Error()
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// killAndMeasure SIGKILLs a service and measures until its agent's tree
// is gone, its private directory removed and its lock free.
func (e *sandbox) killAndMeasure(profile string, a api.Agent, members []punix.Proc) (time.Duration, error) {
	cmd := e.services[profile]
	privRoot := filepath.Join(e.dir, "state", "tether", profile, "private")
	tree := &punix.Tree{Leader: punix.Ref{Pid: a.PID}, Root: a.GuardianPID}
	for _, p := range members {
		tree.Extra = append(tree.Extra, p.Ref())
	}
	begin := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return 0, err
	}
	deadline := begin.Add(10 * time.Second)
	for {
		ms, _ := tree.Members()
		ents, _ := guardian.PrivateDirs(privRoot)
		if len(ms) == 0 && len(ents) == 0 && e.lockFree() {
			took := time.Since(begin)
			_ = cmd.Wait()
			delete(e.services, profile)
			return took, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("after 10 s: %d process(es) left, %d private dir(s)", len(ms), len(ents))
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (e *sandbox) lockFree() bool {
	locks, _ := filepath.Glob(filepath.Join(e.dir, "state", "tether", "locks", "*.lock"))
	for _, l := range locks {
		if !lockFree(l) {
			return false
		}
	}
	return true
}

// quit asks a service to stop every agent and exit, and waits for it.
func (e *sandbox) quit(profile string) error {
	cmd := e.services[profile]
	if err := e.client(profile).Quit(context.Background()); err != nil {
		return fmt.Errorf("quitting profile %q: %w", profile, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		delete(e.services, profile)
		if err != nil {
			return fmt.Errorf("service of profile %q: %w", profile, err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("service of profile %q did not exit", profile)
	}
}

// treesOf counts the live agent trees of the demo identity: processes
// whose session is a live demo agent's. There must only ever be one.
func treesOf(agentPID int) (int, error) {
	procs, err := punix.Processes()
	if err != nil {
		return 0, err
	}
	sessions := map[int]bool{}
	for _, p := range procs {
		if p.Zombie() || p.Pid != p.Sid {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid))
		if bytes.HasSuffix(cmdline, []byte("demo-agent\x00")) {
			sessions[p.Sid] = true
		}
	}
	if len(sessions) == 1 && !sessions[agentPID] {
		return 0, fmt.Errorf("the live demo agent is pid %v, not %d", sessions, agentPID)
	}
	return len(sessions), nil
}

func waitGone(t *punix.Tree, within time.Duration) (time.Duration, error) {
	begin := time.Now()
	for {
		ms, err := t.Members()
		if err != nil {
			return 0, err
		}
		if len(ms) == 0 {
			return time.Since(begin), nil
		}
		if time.Since(begin) > within {
			return 0, fmt.Errorf("%d process(es) of the demo tree left after %v", len(ms), within)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *sandbox) cleanup() error {
	for _, cmd := range e.services {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
	// Guardians of killed services were adopted here; wait for them.
	reapOrphans(5 * time.Second)
	var left []string
	roots, _ := filepath.Glob(filepath.Join(e.dir, "state/tether/*/private"))
	for _, root := range roots {
		dirs, _ := guardian.PrivateDirs(root)
		for _, d := range dirs {
			left = append(left, d.Path)
		}
	}
	socks, _ := filepath.Glob(filepath.Join(e.dir, "run/tether/*.sock"))
	left = append(left, socks...)
	if err := os.RemoveAll(e.dir); err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	return nil
}

func describe(p punix.Proc, agent int) string {
	role := "descendant"
	switch {
	case p.Pid == agent:
		role = "agent (session leader)"
	case p.Sid != agent:
		role = fmt.Sprintf("escapee in its own session %d", p.Sid)
	case p.Pgid != agent:
		role = fmt.Sprintf("worker in its own process group %d", p.Pgid)
	}
	return fmt.Sprintf("pid %-7d %s", p.Pid, role)
}

// lastLogLine returns the part after "tether guardian[pid]: " of the
// last log line containing substr.
func lastLogLine(path, substr string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var found string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, substr) {
			if msg, ok := logline.Message(line); ok {
				found = msg
			}
		}
	}
	return found
}

func lockFree(path string) bool {
	f, err := platform.OpenLockFile(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if platform.TryLock(f) != nil {
		return false
	}
	_ = platform.Unlock(f)
	return true
}

// waitTree waits until the demo tree is complete: the agent, a worker in
// another process group and an escapee in another session, and nothing
// else (the middle of the double fork has exited).
func waitTree(t *punix.Tree, agent int, within time.Duration) ([]punix.Proc, error) {
	deadline := time.Now().Add(within)
	for {
		ms, err := t.Members()
		if err != nil {
			return nil, err
		}
		var worker, escapee bool
		for _, p := range ms {
			worker = worker || (p.Sid == agent && p.Pgid != agent)
			escapee = escapee || p.Sid != agent
		}
		if worker && escapee && len(ms) == 3 {
			return ms, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the demo tree is incomplete after %v: %d process(es)", within, len(ms))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
