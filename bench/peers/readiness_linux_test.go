//go:build linux

package peers

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The readiness row: from a start request to the supervisor reporting the
// agent ready, for the agent in its "ready" mode, which becomes ready
// readyAfter after it starts. A supervisor may learn it in several ways
// (process-compose probes with a period, or watches for a log line); each
// way is timed in a lifetime of its own.
const (
	// readyAfter is the agent's sleep before it is ready (agentScript).
	readyAfter = 200 * time.Millisecond
	// readyName is the ready agent's name and mode.
	readyName = "ready"
	// readyReps is how many starts a way is timed over, unless it says:
	// 21, as the other rows; with 5 the medians of two ways a few
	// milliseconds apart changed places from run to run.
	readyReps = 21
	// readyLimit bounds the wait for one report of ready: above
	// process-compose's default probe period of 10 s.
	readyLimit = 30 * time.Second
)

// readyWay is one way a supervisor learns that its agent is ready.
type readyWay struct {
	// how names the way in the table.
	how string
	// reps is how many starts it is timed over; 0 means readyReps.
	reps int
	// setup writes the supervisor's config for the one agent of
	// readySpecs, ready this way.
	setup func() error
	// start asks for the agent's start and returns once the supervisor
	// reports it ready; nil when the supervisor cannot do this yet.
	start func() error
}

// readier is a supervisor with a column in the readiness row.
type readier interface {
	readyWays() []readyWay
}

// readyResult is one way's cell.
type readyResult struct {
	how     string
	times   []time.Duration
	pending bool // the way is not built
}

func readySpecs() []agentSpec { return []agentSpec{{readyName, readyName, false}} }

// readyFile is the file the ready agent creates for a probe to find
// when its config sets READY_FILE.
func readyFile(h *harness) string { return filepath.Join(h.dir, "ready.flag") }

// readyWays is tether's column: notify (the agent runs systemd-notify
// --ready), http (a listener on a free port), log (its line "ready", the
// one process-compose's ready_log_line watches for) and fd (a newline on
// descriptor 3, as s6's notification-fd); tether answers a start once the
// agent is ready.
func (s *tetherSup) readyWays() []readyWay {
	way := func(how string, key func() (env, ready string, err error)) readyWay {
		return readyWay{
			how: how,
			setup: func() error {
				env, ready, err := key()
				if err != nil {
					return err
				}
				if err := s.setup(readySpecs()); err != nil {
					return err
				}
				return s.addReadiness(readyName, env, ready)
			},
			start: func() error { return s.startAgents(readyName) },
		}
	}
	return []readyWay{
		way("notify", func() (string, string, error) { return "READY_NOTIFY: 1", "notify", nil }),
		way("http", func() (string, string, error) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", "", err
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			return fmt.Sprintf("READY_HTTP_PORT: %d", port), fmt.Sprintf("{http: \"http://127.0.0.1:%d/\"}", port), nil
		}),
		// The variable only marks the way in the agent's environment.
		way("log", func() (string, string, error) { return "READY_LOG: 1", `{log: "^ready$"}`, nil }),
		way("fd", func() (string, string, error) {
			return fmt.Sprintf("READY_FD: %d", s6ReadyFD), fmt.Sprintf("{fd: %d}", s6ReadyFD), nil
		}),
	}
}

// addReadiness gives agent name of the written config an env entry and a
// ready key.
func (s *tetherSup) addReadiness(name, env, ready string) error {
	path := filepath.Join(s.dir, "config", "tether", "agents.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entry := "  - id: " + name + "\n"
	i := strings.Index(string(b), entry)
	if i < 0 {
		return fmt.Errorf("no agent %s in %s", name, path)
	}
	rest := string(b[i:])
	envAt := strings.Index(rest, "    env: {")
	if envAt < 0 {
		return fmt.Errorf("agent %s has no env in %s", name, path)
	}
	envAt += len("    env: {")
	rest = rest[:envAt] + env + ", " + rest[envAt:]
	rest = strings.Replace(rest, "    restart: never\n", "    restart: never\n    ready: "+ready+"\n", 1)
	return os.WriteFile(path, append(b[:i:i], rest...), 0o600)
}

// readyWays is supervisord's column: it has no readiness, only
// startsecs, the time a process must stay up to be called RUNNING;
// startProcess with wait answers then.
func (s *supervisordSup) readyWays() []readyWay {
	return []readyWay{{
		how:   fmt.Sprintf("no readiness: RUNNING once up startsecs=%d", supervisordReadySecs),
		setup: func() error { return s.setup(readySpecs()) },
		start: func() error {
			_, err := s.call("supervisor.startProcess", readyName, true)
			return err
		},
	}}
}

// supervisordReadySecs is the ready agent's startsecs, the least above 0
// (0 is RUNNING at once, whatever the agent does).
const supervisordReadySecs = 1

func supervisordStartsecs(a agentSpec) int {
	if a.mode == readyName {
		return supervisordReadySecs
	}
	return 0
}

// readyWays is s6's column: the service dir's notification-fd names the
// descriptor on which the agent writes a newline once ready, and
// s6-svc -wU returns once s6-supervise has read it.
func (s *s6Sup) readyWays() []readyWay {
	return []readyWay{{
		how:   "notification-fd, s6-svc -wU -u",
		setup: func() error { return s.setup(readySpecs()) },
		start: func() error {
			ms := int(readyLimit.Milliseconds())
			return s.h.run("s6-svc", "-wU", "-T", fmt.Sprint(ms), "-u", filepath.Join(s.scan, readyName))
		},
	}}
}

// s6ReadyFD is the descriptor of the ready agent's notification-fd.
const s6ReadyFD = 3

// s6ReadyEnv is the env(1) assignment of the run script that tells the
// ready agent its descriptor.
func s6ReadyEnv(a agentSpec) string {
	if a.mode != readyName {
		return ""
	}
	return fmt.Sprintf("READY_FD=%d ", s6ReadyFD)
}

// s6Notification writes the service dir's notification-fd for the ready
// agent.
func s6Notification(dir string, a agentSpec) error {
	if a.mode != readyName {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "notification-fd"), fmt.Appendf(nil, "%d\n", s6ReadyFD), 0o644)
}

// measureReady times every way of s's readiness column into r.ready.
func measureReady(t *testing.T, h *harness, s supervisor, r *results) {
	rd, ok := s.(readier)
	if !ok {
		return
	}
	for _, w := range rd.readyWays() {
		res := readyResult{how: w.how, pending: w.start == nil}
		if !res.pending {
			res.times = timeReady(t, h, s, r, w)
		}
		r.ready = append(r.ready, res)
	}
}

// timeReady runs one lifetime of s with the ready agent and times w's
// starts, each followed by a stop.
func timeReady(t *testing.T, h *harness, s supervisor, r *results, w readyWay) []time.Duration {
	what := "readiness (" + w.how + ")"
	if err := w.setup(); err != nil {
		r.fail(t, s, what, err)
		return nil
	}
	if err := s.up(); err != nil {
		r.fail(t, s, what+": start of the supervisor", err)
		return nil
	}
	defer endLifetime(h, s)
	reps := w.reps
	if reps == 0 {
		reps = readyReps
	}
	var times []time.Duration
	for range reps {
		begin := time.Now()
		if err := w.start(); err != nil {
			r.fail(t, s, what, err)
			break
		}
		d := time.Since(begin)
		if d < readyAfter {
			r.fail(t, s, what, fmt.Errorf("reported ready %v after the request, before the agent could be", d))
			break
		}
		times = append(times, d)
		if err := s.stopAgent(readyName); err != nil {
			t.Logf("%s: stop %s answered: %v", s.name(), readyName, err)
		}
		killTag(s.name() + "-" + readyName)
		h.reapZombies()
		if err := settle(s, readyName); err != nil {
			r.fail(t, s, what, err)
			break
		}
		if err := os.Remove(readyFile(h)); err != nil && !os.IsNotExist(err) {
			r.fail(t, s, what, err)
			break
		}
	}
	t.Logf("%s: %s: %v", s.name(), what, times)
	return times
}

// readyCell is a supervisor's cell of the readiness row: each way's
// median, with its name.
func readyCell(r *results) string {
	var cells, pending []string
	for _, w := range r.ready {
		switch {
		case w.pending:
			pending = append(pending, w.how)
		case len(w.times) == 0:
			cells = append(cells, "n/a ("+w.how+")")
		default:
			cells = append(cells, fmt.Sprintf("%.0f ms (%s)", ms(median(w.times)), w.how))
		}
	}
	if len(pending) > 0 {
		cells = append(cells, "n/a (not built): "+strings.Join(pending, ", "))
	}
	if len(cells) == 0 {
		return "n/a"
	}
	return strings.Join(cells, "; ")
}

// fail records that the row what could not be measured on s.
func (r *results) fail(t *testing.T, s supervisor, what string, err error) {
	t.Logf("%s: %s: %v", s.name(), what, err)
	r.errs = append(r.errs, what)
}

// endLifetime stops s and whatever is left of its trees.
func endLifetime(h *harness, s supervisor) {
	s.down()
	killTag(s.name() + "-")
	h.reapZombies()
}
