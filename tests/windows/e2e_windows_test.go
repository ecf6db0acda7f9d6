package windows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	pwin "github.com/tether-dev/tether/platform/windows"
)

// The test binary doubles as the agent: the helper "agent" starts a child
// of its own (the helper "child"), writes both pids to the file pidsEnv
// names and sleeps until it is killed.
const pidsEnv = "TETHER_WIN_E2E_PIDS"

// agentLife bounds a helper's life, so nothing a failed run leaves lives on.
const agentLife = 2 * time.Minute

func TestMain(m *testing.M) {
	testproc.Main(m, testproc.EveryHelperUsed())
}

func init() {
	testproc.Register("agent", agent)
	testproc.Register("child", func([]string) int {
		time.Sleep(agentLife)
		return 0
	})
}

func agent([]string) int {
	child := testproc.Command("child")
	if err := child.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the child:", err)
		return 1
	}
	pids := fmt.Sprintf("%d %d\n", os.Getpid(), child.Process.Pid)
	tmp := os.Getenv(pidsEnv) + ".tmp"
	err := os.WriteFile(tmp, []byte(pids), 0o600)
	if err == nil {
		err = os.Rename(tmp, os.Getenv(pidsEnv))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writing the pids:", err)
		return 1
	}
	time.Sleep(agentLife)
	return 0
}

// world is one throwaway tether installation: its own application data
// directories, a config whose one agent is this test binary, and unique
// profile names, so runs never meet.
type world struct {
	t        *testing.T
	exe      string
	base     string
	config   string
	pids     string
	identity string
	env      []string
}

func newWorld(t *testing.T) *world {
	// The config's agent is this binary as the helper "agent", which
	// starts "child".
	testproc.Used("agent")
	testproc.Used("child")
	exe := os.Getenv("TETHER_EXE")
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("TETHER_EXE is not set: the Windows end-to-end tests must run in CI")
		}
		t.Skip("set TETHER_EXE to a tether.exe built for Windows (.ci/wine-test does)")
	}
	self := testproc.Executable()
	base, err := os.MkdirTemp("", "tether-win-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	// os.RemoveAll fails under Wine 8; this one does not.
	t.Cleanup(func() { _ = pwin.RemoveAll(base) })
	w := &world{
		t: t, exe: exe, base: base,
		config:   filepath.Join(base, "agents.yaml"),
		pids:     filepath.Join(base, "pids"),
		identity: fmt.Sprintf("probe@e2e-%d", os.Getpid()),
	}
	w.env = append(os.Environ(),
		"LocalAppData="+filepath.Join(base, "local"),
		"AppData="+filepath.Join(base, "roaming"))
	cfg := fmt.Sprintf(`agents:
  - id: probe
    identity: %s
    command: ['%s', agent]
    env: {%s: '%s'}
    autostart: false
    restart: never
    stop_timeout: 1s
`, w.identity, self, pidsEnv, w.pids)
	if err := os.WriteFile(w.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// args puts the config flag before args, unless the world runs on the
// embedded default config.
func (w *world) args(args ...string) []string {
	if w.config == "" {
		return args
	}
	return append([]string{"--config", w.config}, args...)
}

// profile returns a profile name unique to this run.
func (w *world) profile(name string) string { return fmt.Sprintf("e2e%d-%s", os.Getpid(), name) }

// run runs tether with args and returns its exit code and output.
func (w *world) run(args ...string) (int, string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.exe, w.args(args...)...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	w.t.Fatalf("tether %v: %v\n%s", args, err, out)
	return 0, ""
}

// service is a running "tether service run".
type service struct {
	cmd     *exec.Cmd
	done    chan struct{}
	client  *client.Client
	profile string
}

// startService starts the service of profile and waits until it answers.
// t.Cleanup kills it if the test has not stopped it.
func (w *world) startService(profile string) *service {
	w.t.Helper()
	cmd := exec.Command(w.exe, w.args("--profile", profile, "service", "run")...)
	cmd.Env = w.env
	log, err := os.Create(filepath.Join(w.base, profile+"-service.log"))
	if err != nil {
		w.t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	s := &service{cmd: cmd, done: make(chan struct{}), profile: profile}
	go func() { _ = cmd.Wait(); close(s.done) }()
	w.t.Cleanup(func() { s.kill() })
	sock, err := api.SocketPath(profile)
	if err != nil {
		w.t.Fatal(err)
	}
	s.client = client.New(sock)
	exited := false
	if !testproc.UntilEvery(30*time.Second, 20*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = s.client.Status(ctx)
		cancel()
		if err == nil {
			return true
		}
		select {
		case <-s.done:
			exited = true
		default:
		}
		return exited
	}) {
		w.t.Fatalf("the service of %s did not answer in 30s: %v\n%s", profile, err, w.serviceLog(profile))
	}
	if exited {
		w.t.Fatalf("the service of %s exited: %v\n%s", profile, cmd.ProcessState, w.serviceLog(profile))
	}
	return s
}

func (w *world) serviceLog(profile string) string {
	b, _ := os.ReadFile(filepath.Join(w.base, profile+"-service.log"))
	return string(b)
}

// kill terminates the service (TerminateProcess: nothing of it runs on)
// and waits for it.
func (s *service) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// quit stops the service through its API and waits for it to exit.
func (s *service) quit(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.client.Quit(ctx); err != nil {
		t.Fatalf("quit %s: %v", s.profile, err)
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		t.Fatalf("the service of %s did not exit after quit", s.profile)
	}
}

// row returns agent id's row as the service reports it.
func (s *service) row(t *testing.T, id string) api.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.client.Status(ctx)
	if err != nil {
		t.Fatalf("status of %s: %v", s.profile, err)
	}
	for _, a := range st.Agents {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("status of %s has no %s: %+v", s.profile, id, st)
	return api.Agent{}
}

// tree returns the live processes of the agent's tree from its pids file,
// written anew by each agent.
func (w *world) tree() []pwin.Ref {
	w.t.Helper()
	// Wine may refuse the read while the agent renames the file into
	// place (a sharing violation): read again for a moment.
	var b []byte
	var err error
	testproc.UntilEvery(time.Second, 10*time.Millisecond, func() bool {
		b, err = os.ReadFile(w.pids)
		return err == nil
	})
	if err != nil {
		w.t.Fatalf("the agent's pids: %v", err)
	}
	var refs []pwin.Ref
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			w.t.Fatalf("the agent's pids %q: %v", b, err)
		}
		if r, err := pwin.RefOf(pid); err == nil && pwin.Alive(r) {
			refs = append(refs, r)
		}
	}
	return refs
}

// waitTree waits until the agent has written its pids and both processes
// run; it returns the agent's pid.
func (w *world) waitTree(after time.Time) int {
	w.t.Helper()
	var pid int
	if !testproc.UntilEvery(30*time.Second, 10*time.Millisecond, func() bool {
		if fi, err := os.Stat(w.pids); err == nil && !fi.ModTime().Before(after) {
			if refs := w.tree(); len(refs) == 2 {
				pid = refs[0].Pid
				return true
			}
		}
		return false
	}) {
		w.t.Fatal("the agent and its child are not both running after 30s")
	}
	return pid
}

// waitGone waits until none of refs runs and returns how long that took
// from begin.
func waitGone(t *testing.T, refs []pwin.Ref, begin time.Time, limit time.Duration) time.Duration {
	t.Helper()
	var left []int
	if !testproc.UntilEvery(time.Until(begin.Add(limit)), 2*time.Millisecond, func() bool {
		left = nil
		for _, r := range refs {
			if pwin.Alive(r) {
				left = append(left, r.Pid)
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("processes %v of the tree still run %v after its owner died", left, limit)
	}
	return time.Since(begin)
}

// identityFree reports whether the identity's mutex can be taken now.
func (w *world) identityFree() bool {
	w.t.Helper()
	name, err := guardian.MutexName(w.identity)
	if err != nil {
		w.t.Fatal(err)
	}
	m, err := pwin.TryLockMutex(name)
	if errors.Is(err, pwin.ErrLocked) {
		return false
	}
	if err != nil {
		w.t.Fatalf("the identity's mutex: %v", err)
	}
	if err := m.Unlock(); err != nil {
		w.t.Fatal(err)
	}
	return true
}

// privateDirs lists what is left in the profile's private root: its
// private directories, and anything but the identities' own directories
// (see guardian.Leftovers).
func (w *world) privateDirs(profile string) []string {
	root := filepath.Join(w.base, "local", "tether", profile, "private")
	left, err := guardian.Leftovers(root)
	if err != nil {
		w.t.Errorf("listing %s: %v", root, err)
	}
	return left
}

// TestServiceCrashWindows: the service is killed (TerminateProcess) while
// its agent runs; the guardian sees its owner die and the agent's whole
// tree, its private directory and its identity go with it (I2). A
// relaunched service brings the enabled agent back exactly once, and a
// second profile meets the typed contention, exit 4 (I1).
func TestServiceCrashWindows(t *testing.T) {
	w := newWorld(t)
	a := w.profile("a")
	svc := w.startService(a)

	begin := time.Now()
	if code, out := w.run("--profile", a, "start", "probe"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	agentPid := w.waitTree(begin)
	if row := svc.row(t, "probe"); row.State != api.StateRunning || row.PID != agentPid {
		t.Fatalf("row %+v, want running with the agent's pid %d", row, agentPid)
	}
	if w.identityFree() {
		t.Fatal("the identity's mutex is free while its agent runs")
	}
	tree := w.tree()

	// The owner dies: nothing tells the guardian but its tether.
	killed := time.Now()
	svc.kill()
	took := waitGone(t, tree, killed, 1*time.Second+5*time.Second)
	if !testproc.UntilEvery(5*time.Second, 5*time.Millisecond, func() bool { return w.identityFree() && len(w.privateDirs(a)) == 0 }) {
		t.Fatalf("after the service died: identity free %v, private dirs %v", w.identityFree(), w.privateDirs(a))
	}
	t.Logf("service killed: tree gone after %v, identity free and private dir removed after %v", took.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	// The relaunched service brings the enabled agent back, once.
	relaunched := time.Now()
	svc = w.startService(a)
	newPid := w.waitTree(relaunched)
	if newPid == agentPid {
		t.Fatalf("the agent's pid %d did not change across the relaunch", newPid)
	}
	if !testproc.UntilEvery(30*time.Second, 10*time.Millisecond, func() bool { return svc.row(t, "probe").State == api.StateRunning }) {
		t.Fatalf("after the relaunch: %+v", svc.row(t, "probe"))
	}

	// A second profile on the same identity: typed contention, exit 4.
	b := w.profile("b")
	other := w.startService(b)
	code, out := w.run("--profile", b, "start", "probe")
	if code != 4 || !strings.Contains(out, "is held by") {
		t.Fatalf("start in a second profile: exit %d, want 4 (contention)\n%s", code, out)
	}
	if refs := w.tree(); len(refs) != 2 || refs[0].Pid != newPid {
		t.Fatalf("after the second profile's start the tree is %v, want the one of pid %d", refs, newPid)
	}

	// Both quit: the agent stops, nothing is left.
	tree = w.tree()
	other.quit(t)
	svc.quit(t)
	waitGone(t, tree, time.Now(), 10*time.Second)
	if !w.identityFree() {
		t.Error("the identity's mutex is held after both services quit")
	}
	if dirs := w.privateDirs(a); len(dirs) > 0 {
		t.Errorf("private dirs after both services quit: %v", dirs)
	}
}

// TestDefaultConfigWindows: with no config file the service runs the
// embedded default, whose demo agent (tether demo-agent: a worker in its
// own process group and a detached escapee) starts by itself; killing the
// service ends all three.
func TestDefaultConfigWindows(t *testing.T) {
	w := newWorld(t)
	w.config = ""
	p := w.profile("default")
	svc := w.startService(p)
	var pids map[string]int
	var code int
	var out string
	if !testproc.UntilEvery(30*time.Second, 50*time.Millisecond, func() bool {
		if code, out = w.run("--profile", p, "logs", "demo", "-n", "20"); code == 0 {
			pids = demoPids(out)
		}
		return code == 0 && len(pids) == 3
	}) {
		t.Fatalf("the demo agent's tree did not come up in 30s: exit %d\n%s\nservice log:\n%s", code, out, w.serviceLog(p))
	}
	if row := svc.row(t, "demo"); row.State != api.StateRunning || row.PID != pids["agent"] {
		t.Fatalf("row %+v, want demo running as pid %d", row, pids["agent"])
	}
	var tree []pwin.Ref
	for role, pid := range pids {
		r, err := pwin.RefOf(pid)
		if err != nil || !pwin.Alive(r) {
			t.Fatalf("the demo %s (pid %d) does not run: %v", role, pid, err)
		}
		tree = append(tree, r)
	}
	killed := time.Now()
	svc.kill()
	took := waitGone(t, tree, killed, 5*time.Second+5*time.Second)
	t.Logf("service killed: the demo agent, its worker and its escapee gone after %v", took.Round(time.Millisecond))
}

// demoPids reads "demo ROLE pid N up" lines of the demo agent's log.
func demoPids(log string) map[string]int {
	pids := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.Fields(line)
		if i := slices.Index(f, "demo"); i >= 0 && len(f) >= i+4 && f[i+2] == "pid" {
			if pid, err := strconv.Atoi(f[i+3]); err == nil {
				pids[f[i+1]] = pid
			}
		}
	}
	return pids
}

// TestUpgradeWindows: `service upgrade` under Windows (Wine here): the
// service starts its successor, hands it the pipe's instances, the lock
// and the tether, and exits once the guardian watches the successor. The
// agent keeps its tree, pids and since (I9), the API answers from the
// successor, and the guardian's owner is the successor: killing it ends
// the tree (I2).
func TestUpgradeWindows(t *testing.T) {
	w := newWorld(t)
	a := w.profile("up")
	svc := w.startService(a)
	begin := time.Now()
	if code, out := w.run("--profile", a, "start", "probe"); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	agentPid := w.waitTree(begin)
	before := svc.row(t, "probe")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st0, err := svc.client.Status(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	tree := w.tree()

	// Refused: nothing changes.
	for _, bad := range []string{filepath.Join(w.base, "nothing.exe"), filepath.Join(os.Getenv("SystemRoot"), "system32", "cmd.exe")} {
		if code, out := w.run("--profile", a, "service", "upgrade", bad); code != 1 || !strings.Contains(out, bad) {
			t.Errorf("upgrade to %s: exit %d, want 1 with the reason\n%s", bad, code, out)
		}
		if row := svc.row(t, "probe"); row.PID != agentPid {
			t.Fatalf("a refused upgrade changed the agent: %+v", row)
		}
	}

	code, out := w.run("--profile", a, "service", "upgrade", w.exe)
	if code != 0 {
		t.Fatalf("service upgrade: exit %d\n%s\nservice log:\n%s", code, out, w.serviceLog(a))
	}
	select {
	case <-svc.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the service before did not exit after the upgrade\n%s", w.serviceLog(a))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	st, err := svc.client.Status(ctx)
	cancel()
	if err != nil {
		t.Fatalf("status after the upgrade: %v\n%s", err, w.serviceLog(a))
	}
	successor, err := pwin.RefOf(st.ServicePID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := pwin.OpenProcess(successor); err == nil {
			_ = p.Kill()
			p.Close()
		}
	})
	if st.ServicePID == st0.ServicePID {
		t.Errorf("the successor has the service's old pid %d", st.ServicePID)
	}
	after := svc.row(t, "probe")
	if after.State != api.StateRunning || after.PID != agentPid || after.GuardianPID != before.GuardianPID || !after.Since.Equal(before.Since) || after.Restarts != before.Restarts {
		t.Errorf("the agent changed across the upgrade: %+v, was %+v", after, before)
	}
	if refs := w.tree(); len(refs) != 2 {
		t.Fatalf("the agent's tree after the upgrade: %v, was %v", refs, tree)
	}

	// The successor is the owner the guardian watches: its death ends the
	// tree.
	p, err := pwin.OpenProcess(successor)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	took := waitGone(t, tree, killed, 1*time.Second+5*time.Second)
	if !testproc.UntilEvery(5*time.Second, 5*time.Millisecond, w.identityFree) {
		t.Fatal("the identity is still held after the successor died")
	}
	t.Logf("upgraded: agent pid %d kept, service pid %d -> %d; the successor killed: tree gone after %v",
		agentPid, st0.ServicePID, st.ServicePID, took.Round(time.Millisecond))
}
