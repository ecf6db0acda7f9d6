package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/logfile"
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
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	w.WriteString("after\n")
	if got := f.read(3); strings.Join(got, ",") != "after" {
		t.Fatalf("after truncation %q", got)
	}
}

// A follower goes on across rotations, in order, even when it reads
// after several: each file is read to its end before the next.
func TestFollowerAcrossRotations(t *testing.T) {
	p := filepath.Join(testdir.Temp(t), "a.log")
	lw, err := logfile.Open(p, logfile.Policy{MaxSize: logfile.MinSize, Keep: 10}, func(path string) (*os.File, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close()
	f := newFollower(p)
	defer f.close()
	next := 1
	var got []string
	for round := range 4 {
		// Each round rotates the log round+1 times before the read.
		var b strings.Builder
		for b.Len() < (round+1)*logfile.MinSize {
			fmt.Fprintf(&b, "%d\n", next)
			next++
		}
		if err := lw.Copy(strings.NewReader(b.String()), logfile.Stdout, nil); err != nil {
			t.Fatal(err)
		}
		for {
			lines := f.read(1000)
			if len(lines) == 0 {
				break
			}
			got = append(got, lines...)
		}
	}
	if len(got) != next-1 {
		t.Fatalf("read %d lines, wrote %d", len(got), next-1)
	}
	for i, l := range got {
		if l != strconv.Itoa(i+1) {
			t.Fatalf("line %d is %q", i+1, l)
		}
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
