package sdnotify

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseAssignments(t *testing.T) {
	m, err := Parse([]byte("READY=1\nSTATUS=listening on 6379\nMAINPID=42\nWATCHDOG=1\nEXTEND_TIMEOUT_USEC=2500000\nWATCHDOG_USEC=30000000\nERRNO=0\nBARRIER=1\nFDSTORE=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Message{
		Ready: true, Status: "listening on 6379", HasStatus: true, MainPID: 42, Watchdog: true,
		ExtendTimeout: 2500 * time.Millisecond, WatchdogInterval: 30 * time.Second,
		HasErrno: true, Barrier: true, Unknown: []string{"FDSTORE"},
	}
	if m.Ready != want.Ready || m.Status != want.Status || !m.HasStatus || m.MainPID != want.MainPID ||
		m.Watchdog != want.Watchdog || m.ExtendTimeout != want.ExtendTimeout || m.WatchdogInterval != want.WatchdogInterval ||
		m.Errno != 0 || !m.HasErrno || !m.Barrier || len(m.Unknown) != 1 || m.Unknown[0] != "FDSTORE" {
		t.Fatalf("Parse = %+v, want %+v", m, want)
	}
}

func TestParseEveryKey(t *testing.T) {
	cases := []struct {
		in    string
		check func(Message) bool
	}{
		{"RELOADING=1", func(m Message) bool { return m.Reloading }},
		{"STOPPING=1", func(m Message) bool { return m.Stopping }},
		{"WATCHDOG=trigger", func(m Message) bool { return m.WatchdogTrigger && !m.Watchdog }},
		{"STATUS=", func(m Message) bool { return m.HasStatus && m.Status == "" }},
		{"STATUS=a=b", func(m Message) bool { return m.Status == "a=b" }},
		{"ERRNO=2", func(m Message) bool { return m.HasErrno && m.Errno == 2 }},
		// systemd-notify ends its datagram without a newline; sd_notify
		// callers often end it with one. Both are the same message.
		{"READY=1", func(m Message) bool { return m.Ready }},
		{"\n\nREADY=1\n\n", func(m Message) bool { return m.Ready }},
	}
	for _, c := range cases {
		m, err := Parse([]byte(c.in))
		if err != nil || !c.check(m) {
			t.Errorf("Parse(%q) = %+v, %v", c.in, m, err)
		}
	}
}

func TestParseMalformedKeepsTheRest(t *testing.T) {
	m, err := Parse([]byte("MAINPID=abc\nREADY=1\nnonsense\nEXTEND_TIMEOUT_USEC=-5\nREADY=yes"))
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "MAINPID" {
		t.Fatalf("first field error = %#v, want MAINPID", fe)
	}
	for _, key := range []string{"MAINPID", "nonsense", "EXTEND_TIMEOUT_USEC", "READY=\"yes\""} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	// READY=1 came before the bad READY=yes: the well-formed assignment
	// stands, as in systemd, which looks for the literal "READY=1".
	if !m.Ready || m.MainPID != 0 {
		t.Fatalf("Parse kept %+v", m)
	}
}

func TestParseTooLong(t *testing.T) {
	b := []byte("READY=1\nSTATUS=" + strings.Repeat("x", MaxDatagram))
	m, err := Parse(b)
	if !errors.Is(err, ErrMalformed) || m.Ready {
		t.Fatalf("Parse of %d bytes = %+v, %v; want refused whole", len(b), m, err)
	}
}

func TestParseHugeInterval(t *testing.T) {
	if _, err := Parse([]byte("WATCHDOG_USEC=18446744073709551615")); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed for an interval past time.Duration", err)
	}
}
