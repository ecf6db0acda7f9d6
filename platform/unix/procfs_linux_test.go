package unix

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readSmall and readDir read what os.ReadFile and os.ReadDir read.
func TestProcfsReads(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // past any first buffer
	if err := os.WriteFile(filepath.Join(dir, "big"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	var buf [16]byte
	for _, name := range []string{"big", "empty"} {
		got, err := readSmall(filepath.Join(dir, name), buf[:0])
		want, _ := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("readSmall(%s) = %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	// A file of /proc, which reports no size.
	got, err := readSmall("/proc/self/maps", nil)
	if err != nil || !bytes.Contains(got, []byte("[stack]")) {
		t.Fatalf("readSmall(/proc/self/maps) = %q, %v", got, err)
	}

	entries, err := readDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.name)
		if e.dir != (e.name == "sub") {
			t.Errorf("%s: dir = %v", e.name, e.dir)
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "big,empty,sub" {
		t.Fatalf("readDir = %v, want big, empty, sub", names)
	}
	// Many entries, over several getdents calls.
	many := t.TempDir()
	for i := range 600 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("entry-%03d-%s", i, strings.Repeat("x", i%40))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if entries, err := readDir(many); err != nil || len(entries) != 600 {
		t.Fatalf("readDir of 600 files: %d entries, %v", len(entries), err)
	}

	for _, err := range []error{
		func() error { _, err := readSmall(filepath.Join(dir, "none"), nil); return err }(),
		func() error { _, err := readDir(filepath.Join(dir, "none")); return err }(),
	} {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing path: %v, want fs.ErrNotExist", err)
		}
	}
}
