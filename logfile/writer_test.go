package logfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// readAll returns the lines of the log at path, oldest file first.
func readAll(t *testing.T, path string) []Line {
	t.Helper()
	var out []Line
	for _, p := range Files(path) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		s.Buffer(nil, 2*MaxLine)
		for s.Scan() {
			out = append(out, Parse(s.Bytes()))
		}
		f.Close()
	}
	return out
}

// Numbered lines written through many rotations come back exactly once,
// in order, and no file passes the size.
func TestCopyRotatesExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	p := Policy{MaxSize: MinSize, Keep: MaxKeep, Timestamps: true}
	w, err := Open(path, p, openAppend, nil)
	if err != nil {
		t.Fatal(err)
	}
	const lines = 20000
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 777) // writes that cut lines
		for i := 1; i <= lines; i++ {
			fmt.Fprintf(bw, "line %d\n", i)
		}
		bw.Flush()
		pw.Close()
	}()
	if err := w.Copy(pr, Stdout, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got := readAll(t, path)
	if len(got) != lines {
		t.Fatalf("%d lines, want %d", len(got), lines)
	}
	for i, l := range got {
		if l.Text != "line "+strconv.Itoa(i+1) || l.Stream != Stdout || time.Since(l.Time) > time.Minute {
			t.Fatalf("line %d is %+v", i+1, l)
		}
	}
	for _, f := range Files(path) {
		if fi, _ := os.Stat(f); fi.Size() > p.MaxSize {
			t.Errorf("%s has %d bytes, over %d", f, fi.Size(), p.MaxSize)
		}
	}
}

// Keep bounds the rotated files; the oldest go.
func TestKeep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	w, err := Open(path, Policy{MaxSize: MinSize, Keep: 2}, openAppend, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Repeat("x", MinSize-1) + "\n"
	for range 5 {
		w.lines(Stdout, []byte(line))
	}
	w.Close()
	if fs := Files(path); len(fs) != 3 || fs[0] != path+".2" || fs[2] != path {
		t.Errorf("files %v, want .2, .1 and the log", fs)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Error(".3 kept")
	}
}

// stderr lines are marked, with and without stamps, and parse back.
func TestStderrMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	for _, stamps := range []bool{true, false} {
		os.Remove(path)
		w, err := Open(path, Policy{MaxSize: DefaultMaxSize, Timestamps: stamps}, openAppend, nil)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 12, 5, 10, 2, 3, 456e6, time.UTC)
		w.linesAt(Stderr, []byte("boom\n"), at)
		w.linesAt(Stdout, []byte("fine\n"), at)
		w.Close()
		b, _ := os.ReadFile(path)
		want := "[stderr] boom\nfine\n"
		if stamps {
			want = "2026-12-05T10:02:03.456Z [stderr] boom\n2026-12-05T10:02:03.456Z fine\n"
		}
		if string(b) != want {
			t.Errorf("timestamps %v: %q, want %q", stamps, b, want)
		}
		got := readAll(t, path)
		if got[0].Stream != Stderr || got[0].Text != "boom" || got[1].Stream != Stdout || got[1].Text != "fine" || stamps != got[0].Time.Equal(at) {
			t.Errorf("parsed %+v", got)
		}
	}
}

// A line longer than MaxLine is cut, and a last line without a newline
// gets one: nothing is dropped.
func TestCopyLongAndUnfinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	w, err := Open(path, Policy{MaxSize: DefaultMaxSize}, openAppend, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("y", MaxLine+10)
	var seen []string
	if err := w.Copy(strings.NewReader(long+"\nend"), Stdout, func(l []byte) { seen = append(seen, string(l)) }); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	if want := long[:MaxLine] + "\n" + long[MaxLine:] + "\nend\n"; string(b) != want {
		t.Errorf("log is %d bytes, want %d", len(b), len(want))
	}
	if len(seen) != 3 || seen[2] != "end" {
		t.Errorf("each saw %d lines", len(seen))
	}
}

// A log whose last line was cut (its writer killed in the middle of a
// write) is ended with a newline before the next writer's first line:
// the cut line stays as it was, and the new lines are whole.
func TestOpenEndsACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte("line 1\nline 2\nli"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second open finds the log whole
		w, err := Open(path, Policy{MaxSize: 1 << 20, Keep: 1}, openAppend, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.lines(Stdout, []byte("next\n"))
		w.Close()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 1\nline 2\nli\nnext\nnext\n"; string(b) != want {
		t.Errorf("the log is %q, want %q", b, want)
	}
}
