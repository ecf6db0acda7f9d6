package state

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/platform"
)

// TestCrashLeavesWholeFile kills a writer at random moments, 50 times, and
// checks after each kill that the file parses and is one of the states the
// writer wrote, never a partial one, and never older than before (I4).
func TestCrashLeavesWholeFile(t *testing.T) {
	dir := testdir.Temp(t)
	last, midWrite := 0, 0
	for i := range 50 {
		kill := startWriter(t, dir)
		// Half the kills land within microseconds of the first write,
		// the rest within the next few milliseconds of writing.
		if i%2 == 1 {
			time.Sleep(rand.N(5 * time.Millisecond))
		}
		kill()
		if len(tempFiles(t, dir)) > 0 {
			midWrite++ // the kill caught a write before its rename
		}

		s, err := Open(dir, platform.OpenAppendNoFollow)
		if err != nil {
			t.Fatalf("kill %d: Open: %v", i, err)
		}
		if err := s.Err(); err != nil {
			t.Fatalf("kill %d: the state file does not load: %v", i, err)
		}
		st := s.State()
		n := generationOf(st)
		if want := generation(n); !reflect.DeepEqual(st, want) {
			t.Fatalf("kill %d: state is not a state the writer wrote:\ngot  %+v\nwant %+v", i, st, want)
		}
		if n <= last {
			t.Fatalf("kill %d: generation %d after %d: a completed write was lost", i, n, last)
		}
		last = n
	}
	t.Logf("%d of 50 kills left a temporary file behind; %d generations written", midWrite, last)

	// A write after the crashes removes the temporary files they left.
	s, err := Open(dir, platform.OpenAppendNoFollow)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(st *State) { *st = generation(last + 1) }); err != nil {
		t.Fatal(err)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 {
		t.Errorf("temporary files left after a successful write: %v", temps)
	}
}

// startHelper starts the test binary as helper role on dir and returns its
// process, stdout and stderr, and a function that kills and reaps it (once;
// later calls do nothing). Its stdout must be read to the end before reap:
// the wait closes it. t.Cleanup reaps it too, whatever ends the test.
func startHelper(t *testing.T, role, dir string) (p *os.Process, stdout io.Reader, stderr *bytes.Buffer, reap func()) {
	t.Helper()
	cmd := testproc.Command(role, dir)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	var err error
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	reap = func() {
		if !waited {
			waited = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(reap)
	return cmd.Process, stdout, stderr, reap
}

// startWriter starts the writer helper on dir, waits until its first update
// is on disk and returns a function that kills it and reaps it.
func startWriter(t *testing.T, dir string) (kill func()) {
	t.Helper()
	_, stdout, stderr, reap := startHelper(t, "writer", dir)
	ready := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(stdout).ReadString('\n')
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			reap()
			t.Fatalf("writer did not get ready: %v; stderr: %s", err, stderr.Bytes())
		}
	case <-time.After(10 * time.Second):
		reap()
		<-ready
		t.Fatalf("writer not ready after 10s; stderr: %s", stderr.Bytes())
	}
	return func() {
		t.Helper()
		reap()
		if stderr.Len() > 0 {
			t.Fatalf("writer failed: %s", stderr.Bytes())
		}
	}
}

// tempFiles lists the temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	for _, e := range entries {
		if e.Name() != FileName {
			temps = append(temps, e.Name())
		}
	}
	return temps
}
