package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// copyBinary copies the binary at from to dir/name, and returns it.
func copyBinary(t *testing.T, from, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return to
}

// guardianCommand returns the executable and the arguments of the
// guardian of profile's agent id.
func (w *world) guardianCommand(profile, id string) (exe string, args []string) {
	w.t.Helper()
	row := w.waitState(profile, id, api.StateRunning)
	pid := row.GuardianPID
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		w.t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		w.t.Fatal(err)
	}
	args = strings.Split(string(bytes.TrimSuffix(cmdline, []byte{0})), "\x00")
	return exe, args[1:]
}

// The service runs the guardian's own executable beside tether for each
// agent; where it is missing, tether itself serves as the guardian.
func TestServiceRunsTheGuardianBeside(t *testing.T) {
	w, bash, _ := crashWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + politeYAML("beside", bash, m+"-beside", true))
	w.startService("default")
	if exe, args := w.guardianCommand("default", "beside"); exe != tetherGuardian || len(args) != 0 {
		t.Errorf("the guardian runs %s %q, want %s alone", exe, args, tetherGuardian)
	}

	w2, _, _ := crashWorld(t)
	w2.writeConfig("agents:\n" + politeYAML("alone", bash, m+"-alone", true))
	alone := copyBinary(t, tether, filepath.Join(w2.dir, "bin"), "tether")
	w2.startServiceWith(alone, "default")
	if exe, args := w2.guardianCommand("default", "alone"); exe != alone || len(args) != 1 || args[0] != "guardian" {
		t.Errorf("without %s beside it, the guardian runs %s %q, want %s guardian", filepath.Base(tetherGuardian), exe, args, alone)
	}
}

// An upgrade to a tether whose guardian beside it cannot say which
// protocol it speaks (a stale or broken file) is refused before the
// pause: the service goes on as it was, with every agent.
func TestUpgradeRefusesAGuardianThatCannotServe(t *testing.T) {
	w, svc, m := upgradeWorld(t, time.Second)
	c := w.client("default")
	before, _ := rowsByID(t, c)
	dir := filepath.Join(w.dir, "new")
	next := copyBinary(t, tether, dir, "tether")
	if err := os.WriteFile(filepath.Join(dir, "tether-guardian"), []byte("#!/bin/sh\necho 'not a guardian'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := w.run(time.Minute, "service", "upgrade", next)
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(dir, "tether-guardian")) {
		t.Fatalf("upgrade to a tether beside a broken guardian: exit %d, %q; want exit 1 naming the guardian\nservice log:\n%s", r.code, r.stderr, svc.output())
	}
	after, st := rowsByID(t, c)
	sameAgents(t, before, after)
	if st.Service == nil || st.Service.Executable != tether {
		t.Errorf("the service runs %+v after a refused upgrade, want %s", st.Service, tether)
	}
	exactlyOnce(t, 100*time.Millisecond, map[string]int{m + "-x": 1, m + "-y": 1, m + "-z": 1})
}
