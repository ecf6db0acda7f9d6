package jepsen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/history"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The lease every host holds its identities under: the shortest ttl the
// issue asks to keep usable, with a stop_timeout of a second.
const (
	ttl         = 4 * time.Second
	stopTimeout = time.Second
)

// agentID is the one agent of every host's config, whose identity all
// the hosts of a run share.
const agentID = "a"

// host is one simulated machine: a real `tether service run` with its
// own config, state, lock directory and socket, which reaches etcd
// through its own proxy, and whose agents append to its own history.
type host struct {
	t       testing.TB
	name    string
	dir     string
	env     []string
	config  string
	history string
	proxy   *etcdtest.Proxy

	svc  *exec.Cmd // nil when the service is not running
	done chan struct{}
	log  *os.File
}

// newHost lays out a host named name under dir, reaching the cluster
// through a proxy of its own, whose agent holds identity under the etcd
// key prefix.
func newHost(t testing.TB, c *etcdtest.Cluster, dir, name, identity, prefix string) *host {
	t.Helper()
	h := &host{t: t, name: name, dir: filepath.Join(dir, name), proxy: c.Proxy()}
	for _, d := range []string{"config", "state", "run"} {
		if err := os.MkdirAll(filepath.Join(h.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range testproc.Environ() {
		if !strings.HasPrefix(kv, "XDG_") {
			h.env = append(h.env, kv)
		}
	}
	h.env = append(h.env,
		"XDG_CONFIG_HOME="+filepath.Join(h.dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(h.dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(h.dir, "run"))
	h.history = filepath.Join(h.dir, "history")
	h.config = filepath.Join(h.dir, "config", "agents.yaml")
	var eps []string
	for _, e := range h.proxy.Endpoints() {
		eps = append(eps, fmt.Sprintf("%q", e))
	}
	argv := testproc.Argv("agent", h.history, name, identity)
	var cmd []string
	for _, a := range argv {
		cmd = append(cmd, fmt.Sprintf("%q", a))
	}
	cfg := fmt.Sprintf(`lease:
  etcd:
    endpoints: [%s]
  ttl: %s
  host: %s
  prefix: %s
agents:
  - id: %s
    identity: %q
    command: [%s]
    stop_timeout: %s
    restart: always
`, strings.Join(eps, ", "), ttl, name, prefix, agentID, identity, strings.Join(cmd, ", "), stopTimeout)
	if err := os.WriteFile(h.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.cleanup)
	return h
}

func (h *host) socket() string { return filepath.Join(h.dir, "run", "tether", "default.sock") }

// start starts the host's service and waits until it answers.
func (h *host) start() {
	h.t.Helper()
	if h.svc != nil {
		h.t.Fatalf("%s: the service runs already", h.name)
	}
	logf, err := os.OpenFile(filepath.Join(h.dir, "service.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(tether, "--config", h.config, "service", "run")
	cmd.Env = h.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		h.t.Fatal(err)
	}
	h.svc, h.done, h.log = cmd, make(chan struct{}), logf
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(h.done)
	exited := false
	if !testproc.UntilEvery(30*time.Second, 10*time.Millisecond, func() bool {
		select {
		case <-h.done:
			exited = true
			return true
		default:
		}
		_, err := h.status()
		return err == nil
	}) || exited {
		h.t.Fatalf("%s: the service did not come up (exited: %v):\n%s", h.name, exited, h.output())
	}
}

// status is the service's status.
func (h *host) status() (api.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.New(h.socket()).Status(ctx)
}

// agent is the row of the host's agent, or the zero row when the service
// does not answer.
func (h *host) agent() api.Agent {
	st, err := h.status()
	if err != nil {
		return api.Agent{}
	}
	for _, a := range st.Agents {
		if a.ID == agentID {
			return a
		}
	}
	return api.Agent{}
}

// output is what the host's services wrote.
func (h *host) output() string {
	b, _ := os.ReadFile(filepath.Join(h.dir, "service.log"))
	if len(b) > 6000 {
		b = append([]byte("..."), b[len(b)-6000:]...)
	}
	return string(b)
}

// result is what a command of tether printed, and its exit code.
type result struct {
	code           int
	stdout, stderr string
}

// run runs tether's command line on the host, bounded by within.
func (h *host) run(within time.Duration, args ...string) result {
	h.t.Helper()
	cmd := exec.Command(tether, append([]string{"--config", h.config}, args...)...)
	cmd.Env = h.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
		h.t.Fatalf("%s: tether %v did not finish within %v\n%s%s", h.name, args, within, out.String(), errb.String())
	}
	return result{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// upgrade hot-upgrades the host's service (`tether service upgrade`),
// which must succeed.
func (h *host) upgrade() {
	h.t.Helper()
	if r := h.run(time.Minute, "service", "upgrade"); r.code != 0 {
		h.t.Fatalf("%s: service upgrade: exit %d\n%s%s\nservice log:\n%s", h.name, r.code, r.stdout, r.stderr, h.output())
	}
}

// tree is the host's service and every process below it: its guardians
// and their agents.
func (h *host) tree() []int {
	if h.svc == nil {
		return nil
	}
	procs, _ := punix.Processes()
	children := map[int][]int{}
	for _, p := range procs {
		if !p.Zombie() {
			children[p.PPid] = append(children[p.PPid], p.Pid)
		}
	}
	out := []int{h.svc.Process.Pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// die kills the whole host at once, as a machine dies: every process of
// it is stopped (SIGSTOP) until none is left to fork, then all are
// SIGKILLed, and reaped. It returns when that began on the monotonic
// clock.
func (h *host) die() int64 {
	h.t.Helper()
	at := history.Now()
	stopped := map[int]bool{}
	for {
		more := false
		for _, pid := range h.tree() {
			if !stopped[pid] {
				stopped[pid], more = true, true
				_ = unix.Kill(pid, unix.SIGSTOP)
			}
		}
		if !more {
			break
		}
	}
	for pid := range stopped {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	h.reap(stopped)
	return at
}

// reap waits for the service and reaps every other process of pids, which
// this process adopted when their parents died.
func (h *host) reap(pids map[int]bool) {
	h.t.Helper()
	if h.svc != nil {
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			h.t.Fatalf("%s: the service outlived its SIGKILL by 30 s", h.name)
		}
		delete(pids, h.svc.Process.Pid)
		h.svc = nil
		h.log.Close()
	}
	if !testproc.UntilEvery(30*time.Second, 5*time.Millisecond, func() bool {
		for pid := range pids {
			var ws unix.WaitStatus
			got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if got == pid || err == unix.ECHILD && !exists(pid) {
				delete(pids, pid)
			}
		}
		return len(pids) == 0
	}) {
		h.t.Fatalf("%s: processes never reaped after their host died: %v", h.name, pids)
	}
}

// exists reports whether a process pid is there, a zombie included.
func exists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// stop stops the host's service politely (SIGTERM), which stops its
// agents, and kills what is left after a deadline: what the service left
// behind is an error.
func (h *host) stop() {
	h.t.Helper()
	if h.svc == nil {
		return
	}
	var before []punix.Ref
	for _, pid := range h.tree()[1:] {
		if p, err := punix.Stat(pid); err == nil {
			before = append(before, p.Ref())
		}
	}
	_ = h.svc.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		h.t.Errorf("%s: the service did not stop within 30 s of SIGTERM:\n%s", h.name, h.output())
		h.die()
		return
	}
	h.svc = nil
	h.log.Close()
	left := map[int]bool{}
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		clear(left)
		for _, r := range before {
			if punix.Alive(r) {
				left[r.Pid] = true
			}
		}
		return len(left) == 0
	}) {
		h.t.Errorf("%s: the service stopped and left %v", h.name, left)
		for pid := range left {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	// Those that were the service's children are now this process's.
	for _, r := range before {
		left[r.Pid] = true
	}
	h.reap(left)
}

// cleanup stops whatever the host still runs, when its test ends, and
// heals its network.
func (h *host) cleanup() {
	h.proxy.Restore()
	for _, pid := range h.tree() {
		_ = unix.Kill(pid, unix.SIGCONT)
	}
	if h.svc != nil {
		h.stop()
	}
}
