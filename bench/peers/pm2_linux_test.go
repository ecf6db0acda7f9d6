//go:build linux

package peers

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

// PM2 as its users run it: an ecosystem file with one app per agent, the
// God Daemon that the first pm2 command spawns (under PM2_HOME, here in
// the run's directory), the pm2 command line, and the programmatic API
// (require('pm2'): connect, start, stop, disconnect) from a long-lived
// node process, pm2Bridge, that the API rows talk to.
//
// Each app runs /bin/bash directly (interpreter none, fork mode), with
// autorestart off, the same grace as every supervisor (kill_timeout) and
// SIGTERM as its stop signal (PM2's default is SIGINT), so the polite and
// the SIGTERM-ignoring agents mean what they mean elsewhere. PM2's own
// tree kill (treekill, on by default) is left on.
type pm2Sup struct {
	h      *harness
	cli    string // the pm2 command
	module string // the pm2 package, for require()
	dir    string
	home   string // PM2_HOME
	eco    string // the ecosystem file
	env    []string
	auto   []string // apps started by up
	bridge *pm2Bridge
	daemon int // the God Daemon's pid
}

func newPM2(h *harness, cli string) *pm2Sup {
	dir := filepath.Join(h.dir, "pm2")
	s := &pm2Sup{h: h, cli: cli, dir: dir, home: filepath.Join(dir, "home"), eco: filepath.Join(dir, "ecosystem.config.js")}
	// bin/pm2 of the package, through node_modules/.bin's link.
	if real, err := filepath.EvalSymlinks(cli); err == nil {
		s.module = filepath.Dir(filepath.Dir(real))
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PM2_") {
			s.env = append(s.env, kv)
		}
	}
	// No version check: it would ask a server on the internet.
	s.env = append(s.env, "PM2_HOME="+s.home, "PM2_DISABLE_VERSION_CHECK=1")
	return s
}

func (s *pm2Sup) name() string { return "pm2" }

// pm2App is one app of the ecosystem file.
type pm2App struct {
	Name          string            `json:"name"`
	Script        string            `json:"script"`
	Args          []string          `json:"args,omitempty"`
	Interpreter   string            `json:"interpreter,omitempty"`
	Autorestart   bool              `json:"autorestart"`
	KillSignal    string            `json:"kill_signal"`
	KillTimeout   int64             `json:"kill_timeout"`
	WaitReady     bool              `json:"wait_ready,omitempty"`
	ListenTimeout int64             `json:"listen_timeout,omitempty"`
	Env           map[string]string `json:"env"`
}

// pm2ReadyApp is the ready agent under PM2: wait_ready only listens to a
// node app's process.send('ready') on PM2's IPC channel.
const pm2ReadyApp = `// PM2's ready agent: ready 200 ms after it starts, said with process.send.
setTimeout(() => process.send('ready'), 200);
setInterval(() => {}, 1 << 30);
`

func (s *pm2Sup) setup(agents []agentSpec) error {
	if err := os.MkdirAll(s.home, 0o700); err != nil {
		return err
	}
	// The mark of a PM2_HOME that has seen a pm2 command before: without
	// it the first one prints its banner and checks for a newer version.
	if err := os.WriteFile(filepath.Join(s.home, "touch"), nil, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.dir, "ready.js"), []byte(pm2ReadyApp), 0o644); err != nil {
		return err
	}
	s.auto = nil
	var apps []pm2App
	for _, a := range agents {
		app := pm2App{
			Name: a.name, Script: "/bin/bash", Args: []string{filepath.Join(s.h.dir, "agent.sh"), a.mode}, Interpreter: "none",
			KillSignal: "SIGTERM", KillTimeout: stopTimeout.Milliseconds(),
			Env: map[string]string{tagEnv: "pm2-" + a.name},
		}
		if a.mode == readyName {
			app.Script, app.Args, app.Interpreter = filepath.Join(s.dir, "ready.js"), nil, ""
			app.WaitReady, app.ListenTimeout = true, readyLimit.Milliseconds()
		}
		apps = append(apps, app)
		if a.autostart {
			s.auto = append(s.auto, a.name)
		}
	}
	b, err := json.MarshalIndent(map[string]any{"apps": apps}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(s.eco, append([]byte("module.exports = "), append(b, ";\n"...)...), 0o600)
}

// pm2Cmd is a pm2 command line.
func (s *pm2Sup) pm2Cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(s.cli, args...)
	cmd.Env, cmd.Dir = s.env, s.dir
	return cmd
}

// up spawns the God Daemon as the first pm2 command does: pm2 start
// ecosystem.config.js for the autostart apps, as a boot would, or else
// pm2 ping. The API's node process loads PM2 meanwhile (it connects
// only for a command). With autostart apps, up does not wait for it, so
// that it takes as long as PM2's own start (the restart row's window
// counts it) and the first command waits instead; without, up waits, so
// that the first start is timed like the others.
func (s *pm2Sup) up() (err error) {
	begin := time.Now()
	defer func() { s.h.t.Logf("pm2: up in %.0f ms", ms(time.Since(begin))) }()
	if s.bridge, err = startPM2Bridge(s); err != nil {
		return err
	}
	first := s.pm2Cmd("ping")
	if len(s.auto) > 0 {
		first = s.pm2Cmd("start", s.eco, "--only", strings.Join(s.auto, ","))
	}
	if err := s.h.runCmd(first); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(s.home, "pm2.pid"))
	if err != nil {
		return err
	}
	if s.daemon, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return fmt.Errorf("pm2.pid: %w", err)
	}
	if len(s.auto) == 0 {
		return s.bridge.load()
	}
	return nil
}

// api runs one command of the programmatic API.
func (s *pm2Sup) api(line string) (string, error) {
	if s.bridge == nil {
		return "", errors.New("pm2 is not up")
	}
	return s.bridge.do(line)
}

func (s *pm2Sup) startAgents(names ...string) error {
	_, err := s.api("start " + strings.Join(names, ","))
	return err
}

// stopAgent is pm2.stop, which answers once the app is down.
func (s *pm2Sup) stopAgent(name string) error {
	_, err := s.api("stop " + name)
	return err
}

// cliStart is pm2 start ecosystem.config.js --only NAME, which exits once
// the app is online.
func (s *pm2Sup) cliStart(name string) error {
	return s.h.runCmd(s.pm2Cmd("start", s.eco, "--only", name))
}

// kill SIGKILLs the God Daemon, then lets go of the API's connection.
func (s *pm2Sup) kill() error {
	if err := unix.Kill(s.daemon, unix.SIGKILL); err != nil {
		return err
	}
	if !waitExit(s.h, s.daemon) {
		return fmt.Errorf("pm2 daemon %d alive after SIGKILL", s.daemon)
	}
	s.daemon = 0
	if s.bridge != nil {
		s.bridge.close()
		s.bridge = nil
	}
	return nil
}

// down is pm2 kill: every app stopped, then the daemon.
func (s *pm2Sup) down() {
	if s.bridge != nil {
		s.bridge.close()
		s.bridge = nil
	}
	if s.daemon == 0 {
		return
	}
	if err := s.h.runCmd(s.pm2Cmd("kill")); err != nil {
		s.h.t.Logf("pm2 kill: %v", err)
	}
	if !waitExit(s.h, s.daemon) {
		_ = unix.Kill(s.daemon, unix.SIGKILL)
		waitExit(s.h, s.daemon)
	}
	s.daemon = 0
}

func (s *pm2Sup) side() ([]int, error) { return []int{s.daemon}, nil }

func (s *pm2Sup) pssPerAgent() (float64, error) { return pssShared(s.h, s, s.daemon) }

// readyWays is PM2's column: wait_ready holds the app in "launching"
// until it sends 'ready', and the start answers once it is "online".
func (s *pm2Sup) readyWays() []readyWay {
	return []readyWay{{
		how:   "wait_ready, process.send('ready') from a node app, whose boot counts",
		setup: func() error { return s.setup(readySpecs()) },
		start: func() error {
			if err := s.startAgents(readyName); err != nil {
				return err
			}
			st, err := s.api("status " + readyName)
			if err != nil {
				return err
			}
			if st != "online" {
				return fmt.Errorf("pm2 start answered with the app %s", st)
			}
			return nil
		},
	}}
}

// waitExit waits up to waitLimit for pid, a child of this process once
// orphaned, to be gone, reaping it.
func waitExit(h *harness, pid int) bool {
	return testproc.UntilEvery(waitLimit, pollEvery, func() bool {
		h.reapZombies()
		return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
	})
}

// pm2BridgeJS is the API side: a command a line on stdin, an answer a
// line on descriptor 3 ("ok [value]" or "error message"); argv: the pm2
// package, the ecosystem file. Each command connects, acts and
// disconnects, as PM2's own examples of its API do: a client that stays
// connected keeps the daemon awake (some 45 context switches a second).
// The answer is the action's callback; the next command waits for the
// disconnect.
const pm2BridgeJS = `'use strict';
const fs = require('fs');
const pm2 = require(process.argv[2]);
const eco = process.argv[3];
const answer = (err, value) => fs.writeSync(3, err
	? 'error ' + String(err.message || err).replace(/\n/g, ' ') + '\n'
	: 'ok' + (value ? ' ' + value : '') + '\n');
const ops = {
	start: (arg, cb) => pm2.start(eco, { only: arg }, (e) => cb(e)),
	stop: (arg, cb) => pm2.stop(arg, (e) => cb(e)),
	status: (arg, cb) => pm2.describe(arg, (e, d) => cb(e, d && d.length ? d[0].pm2_env.status : 'unknown')),
};
let last = Promise.resolve();
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
	const [op, arg] = line.split(' ');
	last = last.then(() => new Promise((done) => {
		if (!ops[op]) { answer(new Error('unknown command ' + op)); return done(); }
		pm2.connect((err) => {
			if (err) { answer(err); return done(); }
			ops[op](arg, (e, value) => { answer(e, value); pm2.disconnect(() => done()); });
		});
	}));
});
rl.on('close', () => last.then(() => process.exit(0)));
answer(null);
`

// pm2Bridge is a node process that uses PM2's programmatic API. Its
// first answer says it has loaded PM2.
type pm2Bridge struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *os.File
	rd     *bufio.Reader
	done   chan struct{}
	loaded bool
}

func startPM2Bridge(s *pm2Sup) (*pm2Bridge, error) {
	js := filepath.Join(s.dir, "bridge.js")
	if err := os.WriteFile(js, []byte(pm2BridgeJS), 0o644); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "bridge.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	b := &pm2Bridge{cmd: exec.Command("node", js, s.module, s.eco), out: r, rd: bufio.NewReader(r)}
	b.cmd.Env, b.cmd.Dir = s.env, s.dir
	b.cmd.Stdout, b.cmd.Stderr = log, log
	b.cmd.ExtraFiles = []*os.File{w}
	if b.in, err = b.cmd.StdinPipe(); err != nil {
		r.Close()
		return nil, err
	}
	if b.done, err = s.h.spawn(b.cmd); err != nil {
		r.Close()
		return nil, err
	}
	return b, nil
}

// do sends one command and returns its answer's value.
func (b *pm2Bridge) do(line string) (string, error) {
	if err := b.load(); err != nil {
		return "", err
	}
	if _, err := io.WriteString(b.in, line+"\n"); err != nil {
		return "", err
	}
	v, err := b.answer()
	if err != nil {
		return "", fmt.Errorf("pm2 API %s: %w", line, err)
	}
	return v, nil
}

// load waits for the bridge's first answer, once.
func (b *pm2Bridge) load() error {
	if b.loaded {
		return nil
	}
	if _, err := b.answer(); err != nil {
		return fmt.Errorf("pm2 API: loading: %w", err)
	}
	b.loaded = true
	return nil
}

func (b *pm2Bridge) answer() (string, error) {
	if err := b.out.SetReadDeadline(time.Now().Add(readyLimit)); err != nil {
		return "", err
	}
	line, err := b.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\n")
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return "", errors.New(msg)
	}
	v, _ := strings.CutPrefix(strings.TrimPrefix(line, "ok"), " ")
	return v, nil
}

// close ends the bridge: its stdin closed, it disconnects and exits.
func (b *pm2Bridge) close() {
	b.in.Close()
	awaitExit(b.cmd, b.done)
	b.out.Close()
}
