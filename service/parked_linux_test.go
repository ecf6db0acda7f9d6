package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/state"
)

// parkFailures is the crash loop of parkRestarts: parked at the third
// quick ending.
const (
	parkFailures = 3
	parkRestarts = "restart: {backoff: 10ms, crash_loop: {failures: 3, within: 1m}}\n"
)

// starts counts the starts of a count-crash agent writing into dir.
func starts(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Name() != "ok" {
			n++
		}
	}
	return n
}

// waitParked waits until agent id is failed with crash_loop, its parking
// on disk, and returns the row and the record.
func waitParked(t *testing.T, c *Controller, w *world, id string) (api.Agent, *state.Parked) {
	t.Helper()
	row := waitState(t, c, id, api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeCrashLoop || !row.Enabled {
		t.Fatalf("row %+v %+v: want failed, crash_loop, enabled", row, row.Error)
	}
	st := readState(t, w)
	p := st.Agents[id].Parked
	if p == nil || p.Code != api.CodeCrashLoop || p.Message != row.Error.Message {
		t.Fatalf("parked record %+v, want the row's crash_loop", p)
	}
	return row, p
}

// stillParked checks that agent id of c stays parked, not started again,
// over a period that would see several starts if it were restarted.
func stillParked(t *testing.T, c *Controller, id, dir string, n int) {
	t.Helper()
	// Over 30 times the backoff.
	if testproc.UntilEvery(300*time.Millisecond, 5*time.Millisecond, func() bool { return starts(t, dir) != n }) {
		t.Errorf("%d starts, want %d: the parked agent was started again", starts(t, dir), n)
	}
	if row := c.row(id); row.State != api.StateFailed || row.Error == nil || row.Error.Code != api.CodeCrashLoop {
		t.Errorf("row %+v %+v: want failed, crash_loop", row, row.Error)
	}
}

// TestCrashLoopParkingIsDurable: an agent parked by a crash loop stays
// parked across a restart of the service and a reload that leaves its
// entry as it is; a changed entry (by reload, or while the service was
// down) gives it a fresh count, and a start by hand unparks it.
func TestCrashLoopParkingIsDurable(t *testing.T) {
	w := newWorld(t, "p", nil)
	dir := filepath.Join(w.dir, "starts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	entry := func(extra string) string {
		return "  - id: x\n    command: AGENT, count-crash, " + dir + extra + "]\n    restart: always\n"
	}
	w.yamlTop(parkRestarts, entry(""))
	fresh := parkFailures // the starts of one whole crash loop
	ctx := context.Background()

	c := w.controller(Options{})
	_, _ = c.Start(ctx, "x", false) // spawned is ready: it answers before the crashes
	_, p := waitParked(t, c, w, "x")
	if n := starts(t, dir); n != fresh {
		t.Fatalf("%d starts until parked, want %d", n, fresh)
	}

	// A reload that leaves the entry as it is: still parked.
	if _, err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	stillParked(t, c, "x", dir, fresh)

	// A reload that changes the command: a fresh count, a whole crash
	// loop before it is parked again.
	w.yamlTop(parkRestarts, entry(", v2"))
	if _, err := c.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a whole second crash loop", func() bool { return starts(t, dir) == 2*fresh })
	row, p2 := waitParked(t, c, w, "x")
	if p2.Config == p.Config {
		t.Errorf("parked again with the old entry's fingerprint")
	}
	stillParked(t, c, "x", dir, 2*fresh)

	// A new service on the same state: still parked, as it was.
	if err := c.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	c = w.controller(Options{})
	again := waitState(t, c, "x", api.StateFailed)
	if again.Error == nil || !again.Error.Equal(*row.Error) || !again.Enabled || !again.Since.Equal(p2.Since) {
		t.Errorf("after a restart of the service: %+v %+v, want %+v since %v", again, again.Error, row.Error, p2.Since)
	}
	stillParked(t, c, "x", dir, 2*fresh)

	// Changed while the service was down: a fresh count too.
	if err := c.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	w.yamlTop(parkRestarts, entry(", v3"))
	c = w.controller(Options{})
	waitFor(t, "a whole third crash loop", func() bool { return starts(t, dir) == 3*fresh })
	waitParked(t, c, w, "x")

	// Started by hand: unparked, on disk too, and a new service starts it.
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Start(ctx, "x", false); err != nil || r.State != api.StateRunning {
		t.Fatalf("start by hand: %+v %v", r, err)
	}
	if st := readState(t, w); st.Agents["x"].Parked != nil {
		t.Errorf("after a start by hand: %+v, want no parking", st.Agents["x"])
	}
	if err := c.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	c = w.controller(Options{})
	waitState(t, c, "x", api.StateRunning)
}

// TestStopUnparks: a parked agent stopped by hand is stopped, not parked,
// and stays so across a restart of the service.
func TestStopUnparks(t *testing.T) {
	w := newWorld(t, "p", nil)
	dir := filepath.Join(w.dir, "starts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w.yamlTop(parkRestarts, "  - id: x\n    command: AGENT, count-crash, "+dir+"]\n    restart: always\n    autostart: true\n")
	ctx := context.Background()
	c := w.controller(Options{})
	waitParked(t, c, w, "x")
	if r, err := c.Stop(ctx, "x"); err != nil || r.State != api.StateStopped {
		t.Fatalf("stop: %+v %v", r, err)
	}
	if st := readState(t, w); st.Agents["x"].Parked != nil || st.Agents["x"].Enabled {
		t.Errorf("after stop: %+v, want disabled and not parked", st.Agents["x"])
	}
	if err := c.Shutdown(ctx, false); err != nil {
		t.Fatal(err)
	}
	c = w.controller(Options{})
	if row := waitState(t, c, "x", api.StateStopped); row.Error != nil || row.Enabled {
		t.Errorf("after a restart of the service: %+v %+v", row, row.Error)
	}
}

// waitFor polls cond until it holds, for at most 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testproc.UntilEvery(15*time.Second, 2*time.Millisecond, cond) {
		t.Fatalf("%s: not seen within 15 s", what)
	}
}

// readState reads the world's state as a process beside the service
// does (state.Read). A read that meets the service renaming a new file
// into place is refused ("replaced while being opened"), and tried
// again, for at most 5 s.
func readState(t *testing.T, w *world) state.State {
	t.Helper()
	var st state.State
	var err error
	if !testproc.UntilEvery(5*time.Second, time.Millisecond, func() bool {
		st, err = state.Read(w.paths.StateDir)
		return err == nil
	}) {
		t.Fatalf("reading the state: %v", err)
	}
	return st
}
