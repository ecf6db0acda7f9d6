package tests

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// world is a throwaway user environment: its own XDG directories, so a
// test never touches the real user's config, state or sockets.
type world struct {
	t   *testing.T
	dir string
	env []string
	// command starts a program as the world's user (nil: exec.Command,
	// as the test's own user); see userWorld.
	command func(name string, args ...string) *exec.Cmd
	// foreign says that user is not the test's: the service refuses the
	// test's own API client, so it is asked through the command line.
	foreign bool
}

// cmd is exec.Command in the world's user's way.
func (w *world) cmd(name string, args ...string) *exec.Cmd {
	if w.command != nil {
		return w.command(name, args...)
	}
	return exec.Command(name, args...)
}

// answers reports whether profile's service answers its status.
func (w *world) answers(profile string) bool {
	if w.foreign {
		return w.run(10*time.Second, "--profile", profile, "status").code == 0
	}
	_, err := w.client(profile).Status(context.Background())
	return err == nil
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// Short: the runtime dir holds unix sockets (about 100 bytes max).
	dir, err := os.MkdirTemp("", "tt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &world{t: t, dir: dir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "WAYLAND_DISPLAY=") && !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
			w.env = append(w.env, kv)
		}
	}
	for _, d := range []string{"config", "state", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.env = append(w.env,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	return w
}

func (w *world) configPath() string { return filepath.Join(w.dir, "config", "tether", "agents.yaml") }

func (w *world) writeConfig(body string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(w.configPath()), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(w.configPath(), []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) socket(profile string) string {
	return filepath.Join(w.dir, "run", "tether", profile+".sock")
}

func (w *world) client(profile string) *client.Client { return client.New(w.socket(profile)) }

// service runs "tether --profile P service run" until the test ends.
type service struct {
	w       *world
	profile string
	cmd     *exec.Cmd
	done    chan struct{}
	log     *os.File
}

func (w *world) startService(profile string) *service {
	w.t.Helper()
	return w.startServiceArgs(profile)
}

// startServiceArgs is startService with more global flags, such as
// "--config FILE".
func (w *world) startServiceArgs(profile string, flags ...string) *service {
	w.t.Helper()
	return w.startServiceWith(tether, profile, flags...)
}

// startServiceWith is startServiceArgs with another tether binary.
func (w *world) startServiceWith(exe, profile string, flags ...string) *service {
	w.t.Helper()
	logf, err := os.CreateTemp(w.dir, "service-*.log")
	if err != nil {
		w.t.Fatal(err)
	}
	args := append([]string{"--profile", profile}, flags...)
	cmd := w.cmd(exe, append(args, "service", "run")...)
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	s := &service{w: w, profile: profile, cmd: cmd, done: make(chan struct{}), log: logf}
	go func() { _ = cmd.Wait(); close(s.done) }()
	w.t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-s.done
			}
		}
		logf.Close()
	})
	exited := false
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		if w.answers(profile) {
			return true
		}
		select {
		case <-s.done:
			exited = true
		default:
		}
		return exited
	}) {
		w.t.Fatalf("service did not come up:\n%s", s.output())
	}
	if exited {
		w.t.Fatalf("service exited at start:\n%s", s.output())
	}
	return s
}

func (s *service) output() string {
	b, _ := os.ReadFile(s.log.Name())
	return string(b)
}

// kill SIGKILLs the service and waits for its exit. A service already
// gone, reaped by the waiter, is not an error: it is what was asked.
func (s *service) kill() {
	s.w.t.Helper()
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.w.t.Fatal(err)
	}
	<-s.done
}

// status returns the agents of profile, via "tether status --json".
func (w *world) status(profile string) map[string]statusRow {
	w.t.Helper()
	r := w.run(10*time.Second, "--profile", profile, "status", "--json")
	if r.code != 0 {
		w.t.Fatalf("status: exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Agents []statusRow `json:"agents"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		w.t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	rows := map[string]statusRow{}
	for _, a := range out.Agents {
		rows[a.ID] = a
	}
	return rows
}

type statusRow struct {
	ID          string     `json:"id"`
	Identity    string     `json:"identity"`
	State       api.State  `json:"state"`
	PID         int        `json:"pid"`
	GuardianPID int        `json:"guardian_pid"`
	Since       time.Time  `json:"since"`
	Restarts    int        `json:"restarts"`
	Error       *api.Error `json:"error"`
	Status      string     `json:"status,omitempty"`
	Usage       *api.Usage `json:"usage"` // status shows what each agent costs
}

func (w *world) waitState(profile, id string, state api.State) statusRow {
	w.t.Helper()
	var st api.Status
	var err error
	var row statusRow
	if !testproc.UntilEvery(15*time.Second, 5*time.Millisecond, func() bool {
		if st, err = w.client(profile).Status(context.Background()); err != nil {
			return false
		}
		for _, a := range st.Agents {
			if a.ID == id && a.State == state {
				row = statusRow{a.ID, a.Identity, a.State, a.PID, a.GuardianPID, a.Since, a.Restarts, a.Error, a.Status, a.Usage}
				return true
			}
		}
		return false
	}) {
		w.t.Fatalf("agent %s of %s never reached %s: %+v %v", id, profile, state, st.Agents, err)
	}
	return row
}

// sessionsOf counts live processes that lead a session and whose command
// line contains marker: one per live agent tree started with it.
func sessionsOf(marker string) []int {
	procs, _ := punix.Processes()
	var out []int
	for _, p := range procs {
		if p.Zombie() || p.Pid != p.Sid {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.Pid))
		if strings.Contains(string(b), marker) {
			out = append(out, p.Pid)
		}
	}
	return out
}

// stop stops the service as its manager would (SIGTERM) and waits for it
// to exit.
func (s *service) stop() {
	s.w.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.w.t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.w.t.Fatalf("the service did not exit within 30 s of SIGTERM:\n%s", s.output())
	}
}
