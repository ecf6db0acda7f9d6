package logline

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 5e6, time.FixedZone("CET", 3600))
	got := Format(at, "guardian", 4241, "stopped (owner_lost) in 3ms")
	if want := "2026-11-30T10:00:00.005Z tether guardian[4241]: stopped (owner_lost) in 3ms\n"; got != want {
		t.Errorf("Format = %q, want %q", got, want)
	}
	if msg, ok := Message(got); !ok || msg != "stopped (owner_lost) in 3ms" {
		t.Errorf("Message(%q) = %q, %v", got, msg, ok)
	}
}

func TestPrintf(t *testing.T) {
	var b bytes.Buffer
	Printf(&b, "service", "listening on %s", "x.sock")
	line := b.String()
	if !strings.HasSuffix(line, " tether service["+strconv.Itoa(os.Getpid())+"]: listening on x.sock\n") || strings.Count(line, "\n") != 1 {
		t.Errorf("Printf wrote %q", line)
	}
	if msg, ok := Message(line); !ok || msg != "listening on x.sock" {
		t.Errorf("Message(%q) = %q, %v", line, msg, ok)
	}
}

func TestMessageRefusesOtherLines(t *testing.T) {
	for _, line := range []string{
		"",
		"agent output: a]: b",
		"2026-11-30T10:00:00Z tether guardian[1]: no milliseconds",
		"2026-11-30T10:00:00.000Z tether guardian: no pid",
		"2026-11-30T10:00:00.000Z other guardian[1]: not tether",
	} {
		if msg, ok := Message(line); ok {
			t.Errorf("Message(%q) = %q, true; want false", line, msg)
		}
	}
}
