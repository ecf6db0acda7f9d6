package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	var b strings.Builder
	for i := range 100000 {
		b.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	b.WriteString("last line\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, err := tailLines(p, 3)
	if err != nil || len(lines) != 3 || lines[2] != "last line" {
		t.Fatalf("tail: %q %v", lines, err)
	}
	if lines, err := tailLines(filepath.Join(dir, "none"), 3); err != nil || lines != nil {
		t.Fatalf("missing file: %q %v", lines, err)
	}
}

func TestCapLogKeepsAppending(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.log")
	w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString(strings.Repeat("old\n", 1000)); err != nil {
		t.Fatal(err)
	}
	if err := capLog(p, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("new\n"); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(p)
	old, _ := os.ReadFile(p + ".1")
	if string(cur) != "new\n" || len(old) != 4000 {
		t.Fatalf("after cap: log %q, rotated %d bytes", cur, len(old))
	}
	if err := capLog(p, 1000); err != nil {
		t.Fatal(err)
	}
	if cur2, _ := os.ReadFile(p); string(cur2) != "new\n" {
		t.Fatalf("a small log was rotated: %q", cur2)
	}
}

func TestFollowerReadsInBatchesAndAcrossTruncation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(p, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFollower(p)
	defer f.close()
	if tail, _ := f.tail(5); len(tail) != 1 || tail[0] != "before" {
		t.Fatalf("tail %q", tail)
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("1\n2\n3\n4\npart")
	if got := f.read(3); strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("first batch %q", got)
	}
	if got := f.read(3); strings.Join(got, ",") != "4" {
		t.Fatalf("second batch %q", got)
	}
	w.WriteString("ial\n")
	if got := f.read(3); strings.Join(got, ",") != "partial" {
		t.Fatalf("joined partial line %q", got)
	}
	if err := capLog(p, 1); err != nil {
		t.Fatal(err)
	}
	w.WriteString("after\n")
	if got := f.read(3); strings.Join(got, ",") != "after" {
		t.Fatalf("after truncation %q", got)
	}
}
