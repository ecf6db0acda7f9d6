package service

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// A log that grows past the cap while the service is quiet is capped at
// once: the watch of the log directory brings the check, no timer does.
func TestCapLogsOnWrite(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(`  - id: a
    command: AGENT, sleep]
`)
	w.controller(Options{})
	log := w.paths.LogPath("a")
	// The controller makes the log directory before it watches it.
	if !testproc.Until(10*time.Second, func() bool {
		_, err := os.Stat(w.paths.LogDir)
		return err == nil
	}) {
		t.Fatalf("no log directory %s", w.paths.LogDir)
	}
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// One write past the cap: written a line at a time, a writer
	// descheduled between lines looks like a log growing slowly, and the
	// check after the first lines is paced for that rate, past the wait
	// below.
	line := strings.Repeat("x", 1023) + "\n"
	if _, err := f.WriteString(strings.Repeat(line, MaxLogSize/len(line)+2)); err != nil {
		t.Fatal(err)
	}
	// The cap copies the log to .1, then truncates it: both, in that
	// order, before the cap is done.
	capped := func() (old, now os.FileInfo, done bool) {
		old, err := os.Stat(log + ".1")
		if err != nil || old.Size() <= MaxLogSize {
			return old, nil, false
		}
		now, err = os.Stat(log)
		return old, now, err == nil && now.Size() < MaxLogSize
	}
	// Well within the first check of the back-off (logCheckFirst), which
	// a service without a watch would wait for.
	if !testproc.Until(logCheckFirst/3, func() bool {
		_, _, done := capped()
		return done
	}) {
		old, now, _ := capped()
		t.Fatalf("%s was not capped within %v: %s.1 is %v, the log %v", log, logCheckFirst/3, log, old, now)
	}
}
