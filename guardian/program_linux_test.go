package guardian

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/wire"
)

// binaries writes, in a directory of its own, a "tether" that fails as
// a guardian (it only says it ran) and, with guardian, a ProgramName
// beside it that is this test binary's guardian, run with the arguments
// it is given: a guardian given "guardian" refuses to run. It returns
// the tether.
func (e *world) binaries(name string, guardian bool) string {
	e.t.Helper()
	dir := filepath.Join(e.dir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	tether := filepath.Join(dir, "tether")
	if err := os.WriteFile(tether, []byte("#!/bin/sh\necho \"tether ran as $1\" >&2\nexit 7\n"), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if guardian {
		script := "#!/bin/sh\nexec '" + e.exe + "' guardian \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, ProgramName), []byte(script), 0o700); err != nil {
			e.t.Fatal(err)
		}
	}
	return tether
}

// The guardian's own executable beside tether is the one that runs, with
// none of tether's arguments; without it, tether runs as "tether
// guardian", looked up again at each start.
func TestStartRunsTheGuardianBeside(t *testing.T) {
	e := newWorld(t)
	tether := e.binaries("bin", true)
	spec := e.spec("beside", "polite")
	spec.Executable = tether
	s := e.start(spec)
	politeTree(e, s)
	stopSession(t, s)

	if err := os.Remove(filepath.Join(filepath.Dir(tether), ProgramName)); err != nil {
		t.Fatal(err)
	}
	spec = e.spec("fallback", "polite")
	spec.Executable = tether
	_, err := Start(context.Background(), spec)
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "tether ran as guardian") {
		t.Fatalf("without %s: err %v, want tether itself run as guardian", ProgramName, err)
	}
}

// A pool's guardians run the guardian's own executable; once it is gone,
// a warm guardian of it is not used, and tether is run instead.
func TestPoolRunsTheGuardianBeside(t *testing.T) {
	e := newWorld(t)
	tether := e.binaries("bin", true)
	p := NewPool(tether)
	defer p.Close()
	testproc.Eventually(t, 20*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.warm) == poolSize
	}, "no warm guardian")
	spec := e.spec("pooled", "polite")
	spec.Executable = ""
	s, err := p.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	stopSession(t, s)

	if err := os.Remove(filepath.Join(filepath.Dir(tether), ProgramName)); err != nil {
		t.Fatal(err)
	}
	spec = e.spec("pooled-fallback", "polite")
	spec.Executable = ""
	_, err = p.Start(context.Background(), spec)
	if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), "tether ran as guardian") {
		t.Fatalf("without %s: err %v, want tether itself run as guardian", ProgramName, err)
	}
}

// A guardian program says which protocol version it speaks, and one
// that cannot say so is an error that names it.
func TestProgramProtocol(t *testing.T) {
	e := newWorld(t)
	tether := e.binaries("bin", true)
	for _, p := range []Program{ProgramFor(tether), {Path: e.exe, Tether: true}} {
		if v, err := p.Protocol(context.Background()); err != nil || v != wire.Version {
			t.Errorf("%s: %v, %v; want %d", p, v, err, wire.Version)
		}
	}
	if _, err := (Program{Path: tether}).Protocol(context.Background()); err == nil || !strings.Contains(err.Error(), tether) {
		t.Errorf("a program that is no guardian: err %v, want one naming it", err)
	}
}
