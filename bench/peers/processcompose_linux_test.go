//go:build linux

package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// process-compose as its users run it: a process-compose.yaml with one
// process per agent, `process-compose up` without its TUI serving its
// REST API on a unix socket in the run's directory (-U -u), the REST API
// for the API rows and `process-compose process start` for the command
// line. An agent that does not start by itself is `disabled: true`, which
// a start over the API or the command line overrides. Each process has
// restart "no" and the same grace as every supervisor (shutdown.timeout_seconds,
// SIGTERM); process-compose signals the agent's process group.
type pcSup struct {
	h    *harness
	exe  string
	dir  string
	sock string
	env  []string
	hc   *http.Client
	cmd  *exec.Cmd
	done chan struct{}
	auto []string // processes that start by themselves
	// readyConf and readyEnv are the ready agent's readiness keys and
	// extra environment, set by a readiness way before its setup.
	readyConf string
	readyEnv  []string
}

func newProcessCompose(h *harness, exe string) *pcSup {
	dir := filepath.Join(h.dir, "process-compose")
	sock := filepath.Join(dir, "pc.sock")
	s := &pcSup{h: h, exe: exe, dir: dir, sock: sock, hc: &http.Client{
		Timeout: readyLimit,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PC_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			s.env = append(s.env, kv)
		}
	}
	// Its settings, theme and shortcuts are looked for here, not in the
	// user's own config.
	s.env = append(s.env, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	return s
}

func (s *pcSup) name() string { return "process-compose" }

func (s *pcSup) setup(agents []agentSpec) error {
	if err := os.MkdirAll(filepath.Join(s.dir, "config"), 0o700); err != nil {
		return err
	}
	var c strings.Builder
	c.WriteString("version: \"0.5\"\nprocesses:\n")
	s.auto = nil
	for _, a := range agents {
		if a.autostart {
			s.auto = append(s.auto, a.name)
		}
		env := []string{tagEnv + "=process-compose-" + a.name}
		extra := ""
		if a.mode == readyName {
			env = append(env, s.readyEnv...)
			extra = s.readyConf
		}
		var quoted []string
		for _, e := range env {
			quoted = append(quoted, fmt.Sprintf("%q", e))
		}
		fmt.Fprintf(&c, `  %s:
    command: %q
    environment: [%s]
    disabled: %v
    availability: {restart: "no"}
    shutdown: {signal: %d, timeout_seconds: %d}
%s`, a.name, "/bin/bash "+filepath.Join(s.h.dir, "agent.sh")+" "+a.mode, strings.Join(quoted, ", "),
			!a.autostart, syscall.SIGTERM, int(stopTimeout.Seconds()), extra)
	}
	return os.WriteFile(filepath.Join(s.dir, "process-compose.yaml"), []byte(c.String()), 0o600)
}

// flags are the global flags of every process-compose command: its API
// on the unix socket, its log in the run's directory.
func (s *pcSup) flags(log string) []string {
	return []string{"-U", "-u", s.sock, "-L", filepath.Join(s.dir, log)}
}

// pcCompleted is what process-compose up prints once its run of the
// processes that start by themselves is over, with --keep-project.
const pcCompleted = "Project Completed"

// up starts process-compose and waits until its project runs. Its API
// answers before that, and a process started in between makes it panic
// with its process table's lock held, after which no call is answered
// (v1.64.1): the run has begun once each process that starts by itself
// is Running, or, with none, once it says its run is over.
func (s *pcSup) up() error {
	stdout := filepath.Join(s.dir, "stdout.log")
	out, err := os.OpenFile(stdout, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	from, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	args := append([]string{"up", "-f", filepath.Join(s.dir, "process-compose.yaml"), "-t=false", "--keep-project"}, s.flags("process-compose.log")...)
	s.cmd = exec.Command(s.exe, args...)
	s.cmd.Env, s.cmd.Dir = s.env, s.dir
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if s.done, err = s.h.spawn(s.cmd); err != nil {
		return err
	}
	return waitAnswer(s.cmd, s.done, func() error { return s.running(stdout, from) })
}

// running returns nil once the project runs (see up), reading what
// process-compose printed from offset from on.
func (s *pcSup) running(stdout string, from int64) error {
	if len(s.auto) == 0 {
		b, err := os.ReadFile(stdout)
		if err != nil {
			return err
		}
		if int64(len(b)) < from || !strings.Contains(string(b[from:]), pcCompleted) {
			return fmt.Errorf("process-compose has not printed %q", pcCompleted)
		}
		return nil
	}
	for _, name := range s.auto {
		st, err := s.state(name)
		if err != nil {
			return err
		}
		if st.Status != "Running" {
			return fmt.Errorf("%s is %s", name, st.Status)
		}
	}
	return nil
}

// pcState is the part of a process's state that the harness reads.
type pcState struct {
	Status string `json:"status"`
	Ready  string `json:"is_ready"`
}

// state is GET /process/NAME.
func (s *pcSup) state(name string) (pcState, error) {
	var st pcState
	body, err := s.call(http.MethodGet, "/process/"+name)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("state of %s: %s: %w", name, body, err)
	}
	return st, nil
}

// call makes one REST call and returns the answer's body.
func (s *pcSup) call(method, path string) ([]byte, error) {
	req, err := http.NewRequest(method, "http://process-compose"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, body)
	}
	return body, nil
}

func (s *pcSup) startAgents(names ...string) error {
	for _, n := range names {
		if _, err := s.call(http.MethodPost, "/process/start/"+n); err != nil {
			return err
		}
	}
	return nil
}

// stopAgent answers once the process has exited or its grace is over.
func (s *pcSup) stopAgent(name string) error {
	_, err := s.call(http.MethodPatch, "/process/stop/"+name)
	return err
}

// cliStart is process-compose process start, which exits once the
// server has answered.
func (s *pcSup) cliStart(name string) error {
	cmd := exec.Command(s.exe, append([]string{"process", "start", name}, s.flags("client.log")...)...)
	cmd.Env, cmd.Dir = s.env, s.dir
	return s.h.runCmd(cmd)
}

func (s *pcSup) kill() error {
	if err := killSpawned(s.cmd, s.done); err != nil {
		return err
	}
	s.cmd = nil
	return nil
}

// down asks the project to stop: every process stopped, then exit. A
// process has stopped for process-compose once its output pipes are
// closed, and the members of a tree that left the agent's process group
// keep them open: if it is still up after stopLimit, what is left of the
// trees is killed, and it exits.
func (s *pcSup) down() {
	if s.cmd == nil {
		return
	}
	errc := make(chan error, 1)
	go func() {
		_, err := s.call(http.MethodPost, "/project/stop")
		errc <- err
	}()
	select {
	case <-s.done:
	case <-time.After(stopLimit):
		s.h.t.Logf("process-compose: up %v after the project's stop; killing what is left of its trees", stopLimit)
		killTag(s.name() + "-")
		awaitExit(s.cmd, s.done)
	}
	// The answer comes as it exits, or the connection ends.
	<-errc
	s.cmd = nil
}

func (s *pcSup) side() ([]int, error) { return []int{s.cmd.Process.Pid}, nil }

func (s *pcSup) pssPerAgent() (float64, error) { return pssShared(s.h, s, s.cmd.Process.Pid) }

// settle waits until process-compose has seen the end of name's
// process: until then it refuses a start ("already running"). It sees
// it only once the process's output pipes close, some time after the
// last member of its tree died.
func (s *pcSup) settle(name string) error {
	return waitAnswer(s.cmd, s.done, func() error {
		st, err := s.state(name)
		if err != nil {
			return err
		}
		switch st.Status {
		case "Completed", "Disabled", "Error", "Skipped":
			return nil
		}
		return fmt.Errorf("%s is still %s", name, st.Status)
	})
}

// pcDefaultProbeReps is how many starts the default probe is timed over:
// each takes about its period, 10 s.
const pcDefaultProbeReps = 3

// readyWays is process-compose's column: a readiness probe (here exec,
// looking for the file the agent creates), which it runs every
// period_seconds (10 by default, 1 at the least: the key is whole
// seconds), or ready_log_line, a line of the agent's output. The start
// answers at once; the state's is_ready says when it is ready.
func (s *pcSup) readyWays() []readyWay {
	probe := func(period string) func() error {
		return func() error {
			s.readyConf = fmt.Sprintf("    readiness_probe:\n      exec: {command: %q}\n%s", "test -e "+readyFile(s.h), period)
			s.readyEnv = []string{"READY_FILE=" + readyFile(s.h)}
			return s.setup(readySpecs())
		}
	}
	return []readyWay{
		{how: "exec probe, default period (10 s)", reps: pcDefaultProbeReps, setup: probe(""), start: s.startReady},
		{how: "exec probe, tuned: period_seconds: 1", setup: probe("      period_seconds: 1\n"), start: s.startReady},
		{how: "ready_log_line", start: s.startReady, setup: func() error {
			s.readyConf, s.readyEnv = "    ready_log_line: \"ready\"\n", nil
			return s.setup(readySpecs())
		}},
	}
}

// pcReadyPoll is the period of the state polls that wait for is_ready.
const pcReadyPoll = 2 * time.Millisecond

// startReady starts the ready agent over the API and polls its state
// until it is ready.
func (s *pcSup) startReady() error {
	if err := s.startAgents(readyName); err != nil {
		return err
	}
	var (
		st  pcState
		err error
	)
	if !testproc.UntilEvery(readyLimit, pcReadyPoll, func() bool {
		st, err = s.state(readyName)
		return err != nil || st.Ready == "Ready"
	}) {
		return fmt.Errorf("not ready after %v: %+v", readyLimit, st)
	}
	return err
}
