package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/state"
)

type world struct {
	t     *testing.T
	dir   string
	exe   string
	paths Paths
}

func newWorld(t *testing.T, profile string, shared *world) *world {
	t.Helper()
	dir := t.TempDir()
	// The controller starts this binary as the helpers "guardian" and,
	// by the config, "agent".
	testproc.Used("guardian")
	testproc.Used("agent")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, dir: dir, exe: exe}
	w.paths = Paths{
		Profile:  profile,
		Config:   filepath.Join(dir, "agents.yaml"),
		StateDir: filepath.Join(dir, "state"),
		LockDir:  filepath.Join(dir, "locks"),
	}
	if shared != nil {
		w.paths.LockDir = shared.paths.LockDir
	}
	w.paths.PrivateRoot = filepath.Join(w.paths.StateDir, "private")
	w.paths.LogDir = filepath.Join(w.paths.StateDir, "logs")
	return w
}

// quickRestarts is the tests' restart default: a short first backoff.
const quickRestarts = "restart: {backoff: 20ms}\n"

// yaml writes the config with agents given as YAML list items; AGENT
// stands for the test binary's agent command.
func (w *world) yaml(agents string) {
	w.t.Helper()
	w.yamlTop(quickRestarts, agents)
}

// yamlTop is yaml with top, the config's keys before the agents.
func (w *world) yamlTop(top, agents string) {
	w.t.Helper()
	body := top + "agents:\n" + strings.ReplaceAll(agents, "AGENT", fmt.Sprintf("[%q, agent", w.exe))
	if err := os.WriteFile(w.paths.Config, []byte(body), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) controller(opts Options) *Controller {
	w.t.Helper()
	cfg, err := config.Load(w.paths.Config)
	if err != nil {
		w.t.Fatal(err)
	}
	store, err := state.Open(w.paths.StateDir, platform.OpenAppendNoFollow)
	if err != nil {
		w.t.Fatal(err)
	}
	opts.Paths, opts.Executable = w.paths, w.exe
	c := NewController(opts, cfg, store)
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := c.Shutdown(ctx, true); err != nil {
			w.t.Errorf("shutdown: %v", err)
		}
	})
	return c
}

// waitState polls the controller until agent id is in one of states.
func waitState(t *testing.T, c *Controller, id string, states ...api.State) api.Agent {
	t.Helper()
	var got api.Agent
	if !testproc.UntilEvery(15*time.Second, 2*time.Millisecond, func() bool {
		for _, a := range c.Status().Agents {
			if a.ID == id && slices.Contains(states, a.State) {
				got = a
				return true
			}
		}
		return false
	}) {
		t.Fatalf("agent %s never reached %v: %+v", id, states, c.Status().Agents)
	}
	return got
}

func TestStartStopRestartAndIntent(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    stop_timeout: 2s
`)
	c := w.controller(Options{})
	if a := waitState(t, c, "a", api.StateStopped); a.Enabled {
		t.Fatalf("not autostarted, yet enabled: %+v", a)
	}
	ctx := context.Background()
	a, err := c.Start(ctx, "a", false)
	if err != nil || a.State != api.StateRunning || a.PID == 0 || a.GuardianPID == 0 {
		t.Fatalf("Start: %+v %v", a, err)
	}
	if st, err := state.Read(w.paths.StateDir); err != nil || !st.Agents["a"].Enabled {
		t.Errorf("start did not save the intent (%v)", err)
	}
	pid := a.PID
	a, err = c.Restart(ctx, "a", false)
	if err != nil || a.State != api.StateRunning || a.PID == pid || a.Restarts != 1 {
		t.Fatalf("Restart: %+v %v", a, err)
	}
	a, err = c.Stop(ctx, "a")
	if err != nil || a.State != api.StateStopped || a.PID != 0 {
		t.Fatalf("Stop: %+v %v", a, err)
	}
	if st, err := state.Read(w.paths.StateDir); err != nil || st.Agents["a"].Enabled {
		t.Errorf("stop did not save the intent (%v)", err)
	}
	if _, err := c.Start(ctx, "nope", false); !isCode(err, api.CodeNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

func isCode(err error, code api.Code) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Code == code
}

func TestAutostartAndIntentSurviveRestartOfService(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: auto
    command: AGENT, sleep]
    autostart: true
  - id: manual
    command: AGENT, sleep]
`)
	c := w.controller(Options{})
	waitState(t, c, "auto", api.StateRunning)
	if _, err := c.Start(context.Background(), "manual", false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stop(context.Background(), "auto"); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	// A new service on the same state: the intent wins over autostart.
	c2 := w.controller(Options{})
	waitState(t, c2, "manual", api.StateRunning)
	if a := waitState(t, c2, "auto", api.StateStopped); a.Enabled {
		t.Errorf("auto was disabled by stop, yet %+v", a)
	}
}

func TestRestartPolicyBackoffAndCrashLoop(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yamlTop("restart: {backoff: 10ms, crash_loop: {failures: 4, within: 1m}}\n", `  - id: crash
    command: AGENT, exit, "3"]
    restart: on-failure
  - id: clean
    command: AGENT, exit, "0"]
    restart: on-failure
  - id: never
    command: AGENT, exit, "3"]
    restart: never
`)
	c := w.controller(Options{})
	ctx := context.Background()
	for _, id := range []string{"crash", "clean", "never"} {
		if _, err := c.Start(ctx, id, false); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	a := waitState(t, c, "crash", api.StateFailed)
	if a.Error == nil || a.Error.Code != api.CodeCrashLoop || a.Restarts != 3 || !strings.Contains(a.Error.Message, "failed 4 times within 1m (3 restarts since it was started)") {
		t.Errorf("crash: %+v %+v", a, a.Error)
	}
	// Started again by hand: a new series, whose restarts the row and
	// the crash loop's message count alike.
	if _, err := c.Start(ctx, "crash", false); err != nil {
		t.Fatal(err)
	}
	if a = waitState(t, c, "crash", api.StateFailed); a.Restarts != 3 || a.Error == nil || !strings.Contains(a.Error.Message, "failed 4 times within 1m (3 restarts since it was started)") {
		t.Errorf("crash started again: restarts %d, %+v", a.Restarts, a.Error)
	}
	if a := waitState(t, c, "clean", api.StateStopped); a.Restarts != 0 {
		t.Errorf("clean exit restarted: %+v", a)
	}
	if a := waitState(t, c, "never", api.StateFailed); a.Error == nil || a.Error.Code != api.CodeExited || !strings.Contains(a.Error.Message, "exit status 3") {
		t.Errorf("never: %+v %+v", a, a.Error)
	}
}

// A run of at least healthy_after counts as healthy: when it ends, the
// backoff starts again at its first delay, and the failures before it no
// longer count toward a crash loop.
func TestRestartHealthyAfterResets(t *testing.T) {
	w := newWorld(t, "p", nil)
	dir := filepath.Join(w.dir, "starts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Three quick failures, a run of 1.5 s that then fails, and quick
	// failures until it is parked.
	w.yamlTop("", `  - id: x
    command: AGENT, runs, `+dir+`, 0s, 0s, 0s, 1500ms]
    restart: {policy: always, backoff: 200ms, max_backoff: 2s, healthy_after: 1s, crash_loop: {failures: 4, within: 1m}}
`)
	c := w.controller(Options{})
	events, cancel := c.Subscribe(nil, 0)
	defer cancel()
	_, _ = c.Start(context.Background(), "x", false) // spawned is ready: it answers before the failures

	// Each pause is from the row's backoff to its next start.
	var pauses []time.Duration
	var backoff time.Time
	var last api.Agent
	timeout := time.After(time.Minute)
	for last.State != api.StateFailed {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Type != api.EventAgent || ev.Agent == nil || ev.Agent.ID != "x" {
				continue
			}
			last = *ev.Agent
			switch {
			case last.State == api.StateBackoff:
				backoff = last.Since
			case last.State == api.StateStarting && !backoff.IsZero():
				pauses = append(pauses, last.Since.Sub(backoff))
				backoff = time.Time{}
			}
		case <-timeout:
			t.Fatalf("never parked; the pauses so far %v, the row %+v", pauses, last)
		}
	}
	// Without the reset, the run that ended healthy would be the fourth
	// failure in a row, and parked at once.
	if n := starts(t, dir); n != 7 || last.Restarts != 6 || last.Error == nil || last.Error.Code != api.CodeCrashLoop ||
		!strings.Contains(last.Error.Message, "failed 4 times within 1m") {
		t.Fatalf("parked after %d starts, %d restarts, %+v: want 7 starts, the last 4 failures a crash loop", n, last.Restarts, last.Error)
	}
	// The pauses double from the first delay, and start again at it
	// after the healthy run (a timer fires late, never early; without
	// the reset the fourth pause would be 1.6 s).
	want := []time.Duration{200, 400, 800, 200, 400, 800}
	if len(pauses) != len(want) {
		t.Fatalf("pauses %v, want %d", pauses, len(want))
	}
	for i, p := range pauses {
		if d := want[i] * time.Millisecond; p < d-10*time.Millisecond || i == 3 && p >= 1200*time.Millisecond {
			t.Errorf("pause %d was %v, want %v: all %v", i+1, p.Round(time.Millisecond), d, pauses)
		}
	}
}

// Two profiles on one identity: the second waits in backoff with a typed
// contention error naming the holder, then parks in failed; it never runs
// while the first does.
func TestContentionAcrossProfiles(t *testing.T) {
	a := newWorld(t, "first", nil)
	b := newWorld(t, "second", a)
	cfg := `  - id: x
    identity: shared@relay
    command: AGENT, sleep]
`
	a.yaml(cfg)
	b.yaml(cfg)
	ca := a.controller(Options{})
	cb := b.controller(Options{ContentionWindow: 300 * time.Millisecond})
	if _, err := ca.Start(context.Background(), "x", false); err != nil {
		t.Fatal(err)
	}
	_, err := cb.Start(context.Background(), "x", false)
	if !isCode(err, api.CodeContention) {
		t.Fatalf("second profile: %v, want contention", err)
	}
	row := waitState(t, cb, "x", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeContention || !strings.Contains(row.Error.Message, `profile "first"`) {
		t.Fatalf("row %+v %+v", row, row.Error)
	}
	// Once the first lets go, the second starts.
	if _, err := ca.Stop(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if r, err := cb.Start(context.Background(), "x", false); err != nil || r.State != api.StateRunning {
		t.Fatalf("after release: %+v %v", r, err)
	}
}

func TestReloadAddsRemovesChanges(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: keep
    command: AGENT, sleep]
    autostart: true
  - id: change
    command: AGENT, sleep]
    autostart: true
  - id: drop
    command: AGENT, sleep]
    autostart: true
`)
	c := w.controller(Options{})
	for _, id := range []string{"keep", "change", "drop"} {
		waitState(t, c, id, api.StateRunning)
	}
	keepPID := waitState(t, c, "keep", api.StateRunning).PID
	changePID := waitState(t, c, "change", api.StateRunning).PID
	events, cancel := c.Subscribe(nil, 0)
	defer cancel()
	w.yaml(`  - id: keep
    command: AGENT, sleep]
    autostart: true
  - id: change
    command: AGENT, sleep]
    autostart: true
    stop_timeout: 3s
  - id: new
    command: AGENT, sleep]
    autostart: true
`)
	done, err := c.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (api.Reloaded{Added: []string{"new"}, Restarted: []string{"change"}, Removed: []string{"drop"}}); !reflect.DeepEqual(done, want) {
		t.Errorf("the reload says it did %+v, want %+v", done, want)
	}
	if got := done.Summary(); got != "1 added, 1 restarted, 1 removed" {
		t.Errorf("summary %q", got)
	}
	if p := waitState(t, c, "keep", api.StateRunning).PID; p != keepPID {
		t.Errorf("unchanged agent restarted")
	}
	if p := waitState(t, c, "change", api.StateRunning).PID; p == changePID {
		t.Errorf("changed agent not restarted")
	}
	waitState(t, c, "new", api.StateRunning)
	for _, a := range c.Status().Agents {
		if a.ID == "drop" {
			t.Errorf("removed agent still listed: %+v", a)
		}
	}
	// Subscribers hear of the removal: a whole status without it.
	st := nextStatusEvent(t, events)
	if slices.ContainsFunc(st.Agents, func(a api.Agent) bool { return a.ID == "drop" }) || len(st.Agents) != 3 {
		t.Errorf("status event after the reload: %+v", st.Agents)
	}
	// An invalid config is rejected and the running one kept.
	if err := os.WriteFile(w.paths.Config, []byte("agents:\n  - id: ../x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reload(context.Background()); !isCode(err, api.CodeConfig) {
		t.Fatalf("bad reload: %v", err)
	}
	if st := c.Status(); st.ConfigError == nil || len(st.Agents) != 3 {
		t.Fatalf("status after a rejected reload: %+v", st)
	}
	if st := nextStatusEvent(t, events); st.ConfigError == nil {
		t.Errorf("status event after a rejected reload has no config error: %+v", st)
	}
}

// nextStatusEvent returns the next status event on events, passing over
// agent events.
func nextStatusEvent(t *testing.T, events <-chan api.Event) api.Status {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Type == api.EventStatus && ev.Status != nil {
				return *ev.Status
			}
		case <-timeout:
			t.Fatal("no status event within 10s")
		}
	}
}

// A malformed state file is reported and left as it is; the service still
// shows and stops what runs.
func TestMalformedStateFile(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    autostart: true
`)
	if err := os.MkdirAll(w.paths.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	bad := []byte(`{"version": 1, "agents": {"a": {"enabled": tru`)
	statePath := filepath.Join(w.paths.StateDir, "state.json")
	if err := os.WriteFile(statePath, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	c := w.controller(Options{})
	waitState(t, c, "a", api.StateRunning)
	if st := c.Status(); st.StateError == nil || st.StateError.Code != api.CodeState {
		t.Fatalf("state error not reported: %+v", st)
	}
	a, err := c.Stop(context.Background(), "a")
	if a.State != api.StateStopped || !isCode(err, api.CodeState) {
		t.Fatalf("stop with a corrupt state file: %+v %v", a, err)
	}
	if b, _ := os.ReadFile(statePath); string(b) != string(bad) {
		t.Fatalf("the malformed state file was changed: %q", b)
	}
}
