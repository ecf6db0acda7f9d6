package service

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/state"
)

// readOnly makes dir and its state file and intent journal immutable
// (chattr +i), which refuses writes even to root, until the test ends or
// the returned function undoes it.
func readOnly(t *testing.T, dir string) (undo func()) {
	t.Helper()
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skipf("chattr not found (e2fsprogs): %v", err)
	}
	run := func(flag string, paths ...string) error {
		out, err := exec.Command(chattr, append([]string{flag}, paths...)...).CombinedOutput()
		if err != nil {
			return &os.PathError{Op: "chattr " + flag, Path: strings.Join(paths, " "), Err: errString(strings.TrimSpace(string(out)))}
		}
		return nil
	}
	if err := run("+i", dir); err != nil {
		t.Skipf("the file system of %s has no immutable flag: %v", dir, err)
	}
	paths := []string{dir}
	for _, name := range []string{state.FileName, state.IntentFile} {
		if p := filepath.Join(dir, name); fileExists(p) {
			paths = append(paths, p)
		}
	}
	done := false
	undo = func() {
		if !done {
			done = true
			if err := run("-i", paths...); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(undo)
	if err := run("+i", paths[1:]...); len(paths) > 1 && err != nil {
		t.Fatal(err)
	}
	return undo
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

type errString string

func (e errString) Error() string { return string(e) }

// An intent that could not be saved is not forgotten (I4): it stays on
// the agent's row, code state, until it is saved, and it is saved once
// the state directory takes writes again, with no one asking twice.
func TestUnsavedIntentIsShownAndRetried(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    autostart: true
`)
	c := w.controller(Options{})
	row := waitState(t, c, "a", api.StateRunning)
	// Once the run's record is written, nothing writes until the stop.
	var st state.State
	var serr error
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		st, serr = state.Read(w.paths.StateDir)
		return serr == nil && st.Agents["a"].Enabled && st.Agents["a"].LastRun != nil && st.Agents["a"].LastRun.PID == row.PID
	}) {
		t.Fatalf("the start was never recorded: %+v %v", st, serr)
	}
	undo := readOnly(t, w.paths.StateDir)

	a, err := c.Stop(context.Background(), "a")
	if !isCode(err, api.CodeState) || a.State != api.StateStopped {
		t.Fatalf("stop with a read-only state directory: %+v %v, want stopped and code state", a, err)
	}
	row = waitState(t, c, "a", api.StateStopped)
	if row.IntentError == nil || row.IntentError.Code != api.CodeState || row.Enabled {
		t.Fatalf("row after the unsaved stop: %+v (intent error %+v), want the unsaved intent on it", row, row.IntentError)
	}
	if st, err := state.Read(w.paths.StateDir); err != nil || !st.Agents["a"].Enabled {
		t.Fatalf("the state says %+v (%v): the stop was saved after all?", st, err)
	}

	undo()
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		st, serr = state.Read(w.paths.StateDir)
		row = api.Agent{}
		for _, r := range c.Status().Agents {
			if r.ID == "a" {
				row = r
			}
		}
		return serr == nil && !st.Agents["a"].Enabled && row.IntentError == nil
	}) {
		t.Fatalf("the stop was never saved: state %+v (%v), row %+v", st, serr, row)
	}
}

// A reload answers once a repaired state file has been read again: the
// start right after it saves its intent.
func TestReloadRereadsARepairedStateFile(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
`)
	if err := os.MkdirAll(w.paths.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(w.paths.StateDir, "state.json")
	if err := os.WriteFile(statePath, []byte(`{"version": 1, "agents": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := w.controller(Options{})
	if st := c.Status(); st.StateError == nil {
		t.Fatalf("malformed state file not reported: %+v", st)
	}
	if err := os.WriteFile(statePath, []byte(`{"version": 1, "agents": {}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Status(); st.StateError != nil {
		t.Fatalf("after the reload the repaired file is still reported: %+v", st.StateError)
	}
	if a, err := c.Start(context.Background(), "a", false); err != nil || a.State != api.StateRunning || a.IntentError != nil {
		t.Fatalf("start right after the reload: %+v %v", a, err)
	}
}

// Done closes only once the shutdown has written the last run records:
// a service that exits on it leaves a state file that says how each run
// ended, and no temporary file.
func TestDoneAfterTheLastRunRecord(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
    autostart: true
  - id: b
    command: AGENT, sleep]
    autostart: true
`)
	c := w.controller(Options{})
	waitState(t, c, "a", api.StateRunning)
	waitState(t, c, "b", api.StateRunning)
	go func() { _ = c.Shutdown(context.Background(), false) }()
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the shutdown never finished")
	}
	st, err := state.Read(w.paths.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if r := st.Agents[id].LastRun; r == nil || r.Stopped.IsZero() {
			t.Errorf("%s: last run %+v when Done closed, want its stop recorded", id, r)
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(w.paths.StateDir, ".state-*.tmp")); len(tmp) > 0 {
		t.Errorf("temporary state files left when Done closed: %v", tmp)
	}
}
