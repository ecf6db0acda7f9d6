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
