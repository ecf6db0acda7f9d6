package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
)

func TestTailLines(t *testing.T) {
	dir := testdir.Temp(t)
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
	dir := testdir.Temp(t)
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
	p := filepath.Join(testdir.Temp(t), "a.log")
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

// A follower made while a line is half written starts at that line: it
// reads the line whole, and the tail before it ends at the line before.
func TestFollowerStartsAtTheLineBeingWritten(t *testing.T) {
	dir := testdir.Temp(t)
	for _, long := range []bool{false, true} {
		p := filepath.Join(dir, fmt.Sprintf("a-%v.log", long))
		half := "12 half"
		if long {
			// A half line longer than one block of the backward scan.
			half += strings.Repeat("x", 10<<10)
		}
		if err := os.WriteFile(p, []byte("10 whole\n11 whole\n"+half), 0o600); err != nil {
			t.Fatal(err)
		}
		f := newFollower(p)
		defer f.close()
		if tail, _ := f.tail(5); strings.Join(tail, ",") != "10 whole,11 whole" {
			t.Fatalf("long %v: tail %q", long, tail)
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.WriteString(" done\n13\n")
		if got := f.read(5); len(got) != 2 || got[0] != half+" done" || got[1] != "13" {
			t.Fatalf("long %v: read %.40q", long, got)
		}
	}
	// A file of one half line: the follower starts at its beginning.
	p := filepath.Join(dir, "one.log")
	if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFollower(p)
	defer f.close()
	if tail, _ := f.tail(5); len(tail) != 0 {
		t.Fatalf("tail of a half line %q", tail)
	}
	os.WriteFile(p, []byte("half line\n"), 0o600)
	if got := f.read(5); strings.Join(got, ",") != "half line" {
		t.Fatalf("read %q", got)
	}
}

// The log checks follow the logs: quiet logs back off to logCheckMax, a
// growing one is checked before it could reach the cap at its rate, and a
// log at the cap is capped.
func TestLogCheckerPace(t *testing.T) {
	dir := testdir.Temp(t)
	quiet, busy := filepath.Join(dir, "quiet.log"), filepath.Join(dir, "busy.log")
	if err := os.WriteFile(quiet, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const max = 10000
	now := time.Now()
	lc := newLogChecker(max, now)
	paths := []string{quiet, busy}

	// Nothing grows: 60 s, 120 s, ... up to the ceiling.
	want := logCheckFirst
	for range 8 {
		want = min(2*want, logCheckMax)
		now = now.Add(lc.wait)
		if got, _ := lc.check(paths, now); got != want {
			t.Fatalf("quiet logs: next check in %v, want %v", got, want)
		}
	}

	// busy.log appears and grows 1000 bytes in 10 s: at that rate it
	// reaches 10000 in 80 s more; the next check comes at half that.
	w, err := os.OpenFile(busy, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now = now.Add(10 * time.Second)
	lc.check(paths, now)
	if _, err := w.WriteString(strings.Repeat("x", 1000)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Second)
	if got, _ := lc.check(paths, now); got != 45*time.Second {
		t.Fatalf("a log growing 100 bytes/s, 9000 bytes from the cap: next check in %v, want %v", got, 45*time.Second)
	}

	// A burst far faster than the checks: at most one a second.
	if _, err := w.WriteString(strings.Repeat("x", 8000)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(100 * time.Millisecond)
	if got, _ := lc.check(paths, now); got != logCheckMin {
		t.Fatalf("a log growing 80 KB/s: next check in %v, want %v", got, logCheckMin)
	}

	// Past the cap: capped at this check.
	if _, err := w.WriteString(strings.Repeat("x", 2000)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	lc.check(paths, now)
	if fi, err := os.Stat(busy); err != nil || fi.Size() != 0 {
		t.Fatalf("the log past the cap: %v %v, want it emptied", fi, err)
	}
	if fi, err := os.Stat(busy + ".1"); err != nil || fi.Size() != 11000 {
		t.Fatalf("the rotated log: %v %v, want 11000 bytes", fi, err)
	}
}
