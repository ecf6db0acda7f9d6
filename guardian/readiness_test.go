//go:build linux || windows

package guardian

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/probe"
	"github.com/tether-dev/tether/wire"
)

// The checks made from the outside (http, tcp, exec, log) work on every
// system; their agents and checks here are the test binary itself.
func init() {
	testproc.Register("ready-agent", readyAgent)
	testproc.Register("exists", func(args []string) int {
		if _, err := os.Stat(args[0]); err != nil {
			return 1
		}
		return 0
	})
}

// readyAgent becomes ready after a delay, in one of the ways an outside
// check sees, and then waits to be stopped: "ready-agent MODE DELAY ARG".
func readyAgent(args []string) int {
	mode, arg := args[0], args[2]
	d, _ := time.ParseDuration(args[1])
	fmt.Println("starting")
	time.Sleep(d)
	switch mode {
	case "http", "tcp":
		l, err := net.Listen("tcp", arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ready-agent:", err)
			return 1
		}
		if mode == "http" {
			go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
		}
	case "log":
		fmt.Println(arg)
	case "file":
		if err := os.WriteFile(arg, nil, 0o600); err != nil {
			return 1
		}
	}
	select {}
}

// nextEvent returns the session's next event, failing after within.
func nextEvent(t *testing.T, e *world, s *Session, within time.Duration) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("events ended\nlog:\n%s", e.log())
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %v\nlog:\n%s", within, e.log())
	}
	return Event{}
}

// expectStopped reads events until the stopped one and checks its reason.
func expectStopped(t *testing.T, e *world, s *Session, reason wire.StopReason, within time.Duration) Event {
	t.Helper()
	for {
		ev := nextEvent(t, e, s, within)
		switch ev.Type {
		case EventStopped:
			if ev.Reason != reason {
				t.Fatalf("stopped for %q (%s), want %q\nlog:\n%s", ev.Reason, ev.Detail, reason, e.log())
			}
			if ev.Cleanup == nil || ev.Cleanup.Code != wire.CleanupOK {
				t.Fatalf("cleanup %+v", ev.Cleanup)
			}
			return ev
		case EventAgentReady:
			t.Fatalf("agent_ready before the stop for %s\nlog:\n%s", reason, e.log())
		}
	}
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ptr[T any](v T) *T { return &v }

func TestReadyOutsideChecks(t *testing.T) {
	const delay = 200 * time.Millisecond
	cases := []struct {
		name  string
		agent func(e *world, port int) []string
		ready func(e *world, port int) probe.Spec
	}{
		{"http",
			func(_ *world, port int) []string {
				return []string{"http", delay.String(), fmt.Sprintf("127.0.0.1:%d", port)}
			},
			func(_ *world, port int) probe.Spec {
				return probe.Spec{Kind: probe.KindHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/health", port)}
			}},
		{"tcp",
			func(_ *world, port int) []string {
				return []string{"tcp", delay.String(), fmt.Sprintf("127.0.0.1:%d", port)}
			},
			func(_ *world, port int) probe.Spec {
				return probe.Spec{Kind: probe.KindTCP, Addr: fmt.Sprintf("127.0.0.1:%d", port)}
			}},
		{"exec",
			func(e *world, _ int) []string { return []string{"file", delay.String(), filepath.Join(e.helper, "up")} },
			func(e *world, _ int) probe.Spec {
				return probe.Spec{Kind: probe.KindExec, Argv: testproc.Argv("exists", filepath.Join(e.helper, "up"))}
			}},
		{"log",
			func(*world, int) []string { return []string{"log", delay.String(), "listening on 8080"} },
			func(*world, int) probe.Spec { return probe.Spec{Kind: probe.KindLog, Pattern: `^listening on \d+\r?$`} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newWorld(t)
			port := freePort(t)
			spec := e.spec("outside@" + c.name)
			spec.Argv = testproc.Argv("ready-agent", c.agent(e, port)...)
			spec.Readiness = &Readiness{Ready: ptr(c.ready(e, port))}
			begin := time.Now()
			s := e.start(spec)
			if !s.Ready().Pending {
				t.Fatal("ready.pending is false")
			}
			// An exec check starts a process each period, which takes
			// seconds on a loaded machine under Wine.
			if ev := nextEvent(t, e, s, time.Minute); ev.Type != EventAgentReady {
				t.Fatalf("event %+v, want agent_ready", ev)
			}
			if d := time.Since(begin); d < delay {
				t.Fatalf("ready after %v, before the agent was", d)
			}
		})
	}
}

func TestReadyOutsideCheckTimesOut(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("outside@late")
	spec.Argv = testproc.Argv("ready-agent", "log", "0s", "something else")
	spec.Readiness = &Readiness{Ready: &probe.Spec{Kind: probe.KindLog, Pattern: "^never$"}, StartTimeout: wire.Duration(time.Second)}
	s := e.start(spec)
	ev := expectStopped(t, e, s, wire.ReasonNotReady, 20*time.Second)
	if !strings.Contains(ev.Detail, "not ready within 1s") || !strings.Contains(ev.Detail, "^never$") {
		t.Errorf("detail %q", ev.Detail)
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Errorf("Stop after not_ready: %v", err)
	}
}

func TestHealthCheckStopsAnUnhealthyAgent(t *testing.T) {
	e := newWorld(t)
	up := filepath.Join(e.helper, "healthy")
	if err := os.WriteFile(up, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	spec := e.spec("health@exec")
	spec.Argv = testproc.Argv("ready-agent", "none", "0s", "-")
	spec.Readiness = &Readiness{Health: &HealthCheck{Check: probe.Spec{Kind: probe.KindExec, Argv: testproc.Argv("exists", up)},
		Every: wire.Duration(50 * time.Millisecond), Timeout: wire.Duration(5 * time.Second), Failures: 3}}
	s := e.start(spec)
	if s.Ready().Pending {
		t.Fatal("an agent with only a health check is ready at spawn")
	}
	// Healthy for a while: several checks pass.
	testproc.Eventually(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(e.dir, "agent.log"))
		return len(b) > 0
	}, "the agent never logged")
	removed := time.Now()
	if err := os.Remove(up); err != nil {
		t.Fatal(err)
	}
	ev := expectStopped(t, e, s, wire.ReasonUnhealthy, 20*time.Second)
	if d := time.Since(removed); d < 100*time.Millisecond {
		t.Errorf("unhealthy %v after the check began failing; three failures 50 ms apart take longer", d)
	}
	if !strings.Contains(ev.Detail, "3 health checks in a row failed") || !strings.Contains(ev.Detail, "exit status 1") {
		t.Errorf("detail %q", ev.Detail)
	}
}
