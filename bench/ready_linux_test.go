package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/client"
	"github.com/tether-dev/tether/internal/testproc"
	"golang.org/x/sys/unix"
)

// notifyAgent is a ready: notify agent in python3 (as programs written
// for Type=notify are: one sendto of READY=1 to $NOTIFY_SOCKET). It waits
// for a line on the fifo named by its first argument when there is one,
// then writes the CLOCK_MONOTONIC time it sent READY=1 at, in
// nanoseconds, to the file named by its second, and sleeps.
const notifyAgent = `
import os, socket, sys, time
fifo, out = sys.argv[1], sys.argv[2]
if fifo != "-":
    with open(fifo) as f:
        f.readline()
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
s.sendto(b"READY=1", os.environ["NOTIFY_SOCKET"])
with open(out + ".tmp", "w") as f:
    f.write(str(t))
os.rename(out + ".tmp", out)
time.sleep(100000)
`

// BenchmarkReadyNotify measures two figures of a ready: notify agent
// (I8): from its READY=1 datagram until the API's event stream shows it
// running, and from that datagram until "tether start" returns.
func BenchmarkReadyNotify(b *testing.B) {
	python := lookPath(b, "python3")
	exe := tetherBinary(b)
	w := newSvcWorld(b, 0)
	u := newUndo(b)
	fifo := filepath.Join(w.dir, "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(w.dir, "ready-at")
	cfg := fmt.Sprintf(`agents:
  - id: gated
    command: [%[1]s, -c, %[2]q, %[3]s, %[4]s]
    ready: notify
  - id: eager
    command: [%[1]s, -c, %[2]q, "-", %[4]s]
    ready: notify
`, python, notifyAgent, fifo, out)
	if err := os.WriteFile(filepath.Join(w.dir, "config", "tether", "agents.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := w.startService(exe)
	if err != nil {
		b.Fatal(err)
	}
	u.add(s.abort)
	if err := waitAPI(w.client, s); err != nil {
		b.Fatal(err)
	}

	var toAPI, toAnswer, toReturn []time.Duration
	for b.Loop() {
		d, err := readyToEvent(w, fifo, out)
		if err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		toAPI = append(toAPI, d)
		if d, err = readyToAnswer(w, out); err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		toAnswer = append(toAnswer, d)
		if d, err = readyToReturn(w, exe, out); err != nil {
			b.Fatalf("%v\nservice log:\n%s", err, s.output())
		}
		toReturn = append(toReturn, d)
	}
	reportDurations(b, "ready-to-api-", toAPI)
	reportDurations(b, "ready-to-api-start-answer-", toAnswer)
	reportDurations(b, "ready-to-start-return-", toReturn)
	if len(toAPI) > 0 {
		checkTarget(b, "median READY=1 to running on the API", millis(quantile(toAPI, 0.5)), 1, "ms")
		checkTarget(b, "median READY=1 to tether start's return", millis(quantile(toReturn, 0.5)), 2, "ms")
	}
}

// waitAPI waits until the service answers.
func waitAPI(c *client.Client, s *svc) error {
	var up, exited bool
	testproc.UntilEvery(waitLimit, statusEvery, func() bool {
		_, err := c.Status(context.Background())
		up = err == nil
		select {
		case <-s.done:
			exited = true
		default:
		}
		return up || exited
	})
	switch {
	case up:
		return nil
	case exited:
		return fmt.Errorf("the service exited: %v\n%s", s.waitErr, s.output())
	}
	return fmt.Errorf("the service does not answer after %v\n%s", waitLimit, s.output())
}

// monotonic reads CLOCK_MONOTONIC, the clock the agent stamps its
// READY=1 with: one clock for both processes.
func monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// readAt reads the agent's READY=1 time once it is written.
func readAt(out string) (time.Duration, error) {
	var b []byte
	if !testproc.Until(waitLimit, func() bool {
		var err error
		b, err = os.ReadFile(out)
		return err == nil
	}) {
		return 0, fmt.Errorf("the agent never wrote %s", out)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(n), err
}

// readyToEvent starts the gated agent without waiting, watches its row
// on the event stream, lets it send READY=1 and times the running row's
// arrival.
func readyToEvent(w *svcWorld, fifo, out string) (time.Duration, error) {
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	events, err := w.client.Events(ctx)
	if err != nil {
		return 0, err
	}
	res, err := w.client.Action(ctx, api.PathStart, api.IDsRequest{IDs: []string{"gated"}, NoWait: true})
	if err != nil {
		return 0, err
	}
	if r := res.Results[0]; r.Error != nil || r.Agent.State != api.StateStarting {
		return 0, fmt.Errorf("start --no-wait answered %+v %+v", r.Agent, r.Error)
	}
	// Opening the fifo for writing waits until the agent opens it.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	_, err = f.WriteString("go\n")
	f.Close()
	if err != nil {
		return 0, err
	}
	var seen time.Duration
	for ev, err := range events {
		if err != nil {
			return 0, err
		}
		if ev.Agent != nil && ev.Agent.ID == "gated" && ev.Agent.State == api.StateRunning {
			seen = monotonic()
			break
		}
	}
	at, err := readAt(out)
	if err != nil {
		return 0, err
	}
	return seen - at, stopAgent(w, "gated")
}

// readyToAnswer starts the eager agent over the API, which answers once
// it is ready, and times the answer from the agent's READY=1: the
// command line's figure without its process.
func readyToAnswer(w *svcWorld, out string) (time.Duration, error) {
	os.Remove(out)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := w.client.Action(ctx, api.PathStart, api.IDsRequest{IDs: []string{"eager"}})
	answered := monotonic()
	if err != nil {
		return 0, err
	}
	if r := res.Results[0]; r.Error != nil || r.Agent.State != api.StateRunning {
		return 0, fmt.Errorf("start answered %+v %+v", r.Agent, r.Error)
	}
	at, err := readAt(out)
	if err != nil {
		return 0, err
	}
	return answered - at, stopAgent(w, "eager")
}

// readyToReturn runs "tether start eager" and times its return from the
// agent's READY=1.
func readyToReturn(w *svcWorld, exe, out string) (time.Duration, error) {
	os.Remove(out)
	cmd := exec.Command(exe, "--profile", svcProfile, "start", "eager")
	cmd.Env = w.env
	b, err := cmd.CombinedOutput()
	returned := monotonic()
	if err != nil || !strings.Contains(string(b), "eager: running") {
		return 0, fmt.Errorf("tether start eager: %v: %s", err, b)
	}
	at, err := readAt(out)
	if err != nil {
		return 0, err
	}
	return returned - at, stopAgent(w, "eager")
}

func stopAgent(w *svcWorld, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := w.client.Stop(ctx, id)
	if err == nil && res.Results[0].Error != nil {
		err = res.Results[0].Error
	}
	return err
}
