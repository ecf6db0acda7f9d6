//go:build linux || windows

package guardian

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
)

// ProgramFor finds the guardian's own executable beside tether, or beside
// the file a link to tether points to, and falls back to tether itself
// for anything that is not a regular file it may run.
func TestProgramFor(t *testing.T) {
	dir := testdir.Temp(t)
	write := func(path string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tether := write(filepath.Join(dir, "alone", "tether"), 0o755)
	if got, want := ProgramFor(tether), (Program{Path: tether, Tether: true}); got != want {
		t.Errorf("alone: %+v, want %+v", got, want)
	}
	if got := ProgramFor(tether).String(); got != tether+" guardian" {
		t.Errorf("alone: String %q", got)
	}

	tether = write(filepath.Join(dir, "both", "tether"), 0o755)
	g := write(filepath.Join(dir, "both", ProgramName), 0o755)
	if got, want := ProgramFor(tether), (Program{Path: g}); got != want {
		t.Errorf("beside: %+v, want %+v", got, want)
	}
	if got := ProgramFor(g); got != (Program{Path: g}) {
		t.Errorf("the guardian's own, named: %+v", got)
	}

	tether = write(filepath.Join(dir, "dir", "tether"), 0o755)
	if err := os.Mkdir(filepath.Join(dir, "dir", ProgramName), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := ProgramFor(tether); !got.Tether {
		t.Errorf("a directory named %s: %+v, want tether itself", ProgramName, got)
	}

	if runtime.GOOS != "windows" {
		tether = write(filepath.Join(dir, "noexec", "tether"), 0o755)
		write(filepath.Join(dir, "noexec", ProgramName), 0o644)
		if got := ProgramFor(tether); !got.Tether {
			t.Errorf("a %s that may not be run: %+v, want tether itself", ProgramName, got)
		}

		link := filepath.Join(dir, "bin", "tether")
		if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "both", "tether"), link); err != nil {
			t.Fatal(err)
		}
		if got, want := ProgramFor(link), (Program{Path: g}); got != want {
			t.Errorf("tether linked from another directory: %+v, want %+v", got, want)
		}
	}
}
