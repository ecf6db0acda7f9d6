package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"slices"
	"testing"
)

// The files are the same bytes for the same arguments (make dist builds
// twice and compares), and the compressed man page is the page.
func TestDistfilesAreReproducible(t *testing.T) {
	a, b := distfiles("1.2.3", "2026-12-05"), distfiles("1.2.3", "2026-12-05")
	if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
		t.Fatal("different file sets")
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs from one run to the next", name)
		}
	}
	for _, name := range []string{"tether.1", "tether.service", "completions/tether.bash", "completions/tether.zsh",
		"completions/tether.fish", "completions/tether.ps1", "icons/hicolor/48x48/apps/tether.png", "icons/hicolor/scalable/apps/tether.svg"} {
		if len(a[name]) == 0 {
			t.Errorf("no %s", name)
		}
	}
	r, err := gzip.NewReader(bytes.NewReader(a["tether.1.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(page, a["tether.1"]) {
		t.Errorf("tether.1.gz is not tether.1 (%v)", err)
	}
	if !r.Header.ModTime.IsZero() || r.Header.Name != "" {
		t.Errorf("gzip header carries %q of %v", r.Header.Name, r.Header.ModTime)
	}
}
