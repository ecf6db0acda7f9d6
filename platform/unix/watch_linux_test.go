package unix

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// quiet is how long a watch is given to send a value it must not send.
const quiet = 200 * time.Millisecond

func fired(w *WriteWatch, within time.Duration) bool {
	select {
	case <-w.C():
		return true
	case <-time.After(within):
		return false
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestWriteWatchOncePerArm(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	appendTo(t, log, "before the watch\n")
	w, err := WatchWrites(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	appendTo(t, log, "not armed\n")
	if fired(w, quiet) {
		t.Fatal("a watch that was never armed sent a value")
	}
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	if err := w.Arm(); err != nil {
		t.Fatalf("arming an armed watch: %v", err)
	}
	if fired(w, quiet) {
		t.Fatal("an armed watch sent a value before any write")
	}
	// A writer that keeps its file open, as an agent does its log.
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 3 {
		if _, err := f.WriteString("line\n"); err != nil {
			t.Fatal(err)
		}
		if i == 0 && !fired(w, waitLimit) {
			t.Fatal("no value after a write to an armed watch")
		}
	}
	if fired(w, quiet) {
		t.Fatal("more than one value for one Arm")
	}
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("again\n"); err != nil {
		t.Fatal(err)
	}
	if !fired(w, waitLimit) {
		t.Fatal("no value after a write once armed again")
	}
}

func TestWriteWatchNewFileAndLostDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := WatchWrites(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(dir, "new.log"), "first\n")
	if !fired(w, waitLimit) {
		t.Fatal("no value after a new file was written")
	}
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if !fired(w, waitLimit) {
		t.Fatal("no value after the directory was removed")
	}
	if err := w.Arm(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Arm of a removed directory = %v, want ErrNotExist", err)
	}
}

func TestWriteWatchClose(t *testing.T) {
	dir := t.TempDir()
	w, err := WatchWrites(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Arm(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	appendTo(t, filepath.Join(dir, "a.log"), "after the close\n")
	if fired(w, quiet) {
		t.Fatal("a closed watch sent a value")
	}
	if err := w.Arm(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Arm after Close = %v, want ErrClosed", err)
	}
}
