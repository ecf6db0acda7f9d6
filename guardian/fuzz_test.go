package guardian

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/tether-dev/tether/wire"
)

// protocolSeeds are the lines both ends write, one of each message type.
func protocolSeeds(t testing.TB) []byte {
	since := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	timeout := wire.Duration(3 * time.Second)
	holder := &wire.Holder{Identity: "a@relay", Profile: "work", GuardianPID: 41, AgentPID: 42, Since: since}
	var b bytes.Buffer
	for _, m := range []message{
		{Type: wire.MsgStart, Version: wire.Version, Start: &request{
			Identity: "a@relay", Profile: "work", Argv: []string{"goose", "acp", ""}, Dir: "/srv/a",
			Env: []string{"A=1", "B=two words", "C="}, StopTimeout: wire.Duration(5 * time.Second), KillGrace: wire.Duration(time.Second),
			LockDir: "/run/user/1000/tether/locks", PrivateRoot: "/tmp/p", LogPath: "/tmp/a.log", NoCgroup: true,
		}},
		{Type: wire.MsgStart, Version: wire.Version, Start: &request{Identity: "a@relay", Reclaim: true}},
		{Type: wire.MsgStop, Timeout: &timeout},
		{Type: wire.MsgReady, Version: wire.Version, Ready: &wire.Ready{GuardianPID: 41, AgentPID: 42, SessionID: 42,
			Containment: wire.ContainmentCgroup, Cgroup: "/sys/fs/cgroup/tether/a", Subreaper: true, PrivateDir: "/tmp/p/a",
			LockPath: "/run/l", Since: since, TookOver: holder}},
		{Type: wire.MsgFailed, Version: wire.Version, Failure: &wire.Failure{Code: wire.CodeContention, Message: "held", Holder: holder}},
		{Type: wire.MsgFailed, Version: wire.Version, Failure: &wire.Failure{Code: wire.CodeSpawn, Message: "no such file", Path: "/bin/x", Cause: wire.CauseNotFound}},
		{Type: wire.MsgExited, Exit: &wire.Exit{Code: -1, Signal: "killed"}},
		{Type: wire.MsgCleanupFailed, Cleanup: &wire.Cleanup{Code: wire.CleanupTreeAlive, Message: "2 left", Left: []int{7, 8}, Forced: true, Elapsed: wire.Duration(time.Millisecond)}, Retry: &timeout, Reason: wire.ReasonOwnerLost},
		{Type: wire.MsgStopped, Cleanup: &wire.Cleanup{Code: wire.CleanupOK, Terminated: 3, Killed: 1}, Reason: wire.ReasonStopRequested},
		{Type: wire.MsgAttach, Version: wire.Version, Owner: &procRef{Pid: 40, Start: 123}, Profile: "work"},
		{Type: wire.MsgAttached, Version: wire.Version, Ready: &wire.Ready{GuardianPID: 41, GuardianStart: 99, AgentPID: 42, Since: since, Pending: true}, Detail: "warming up", MainPID: 43},
		{Type: wire.MsgQuery, Version: wire.Version},
		{Type: wire.MsgWaiting, Version: wire.Version, Waiting: &wire.Waiting{Identity: "a@relay", Profile: "work", GuardianPID: 41, AgentPID: 42, Since: since, Orphaned: since, Until: since.Add(time.Minute)}},
	} {
		m.Time = since
		if err := writeMessage(&b, m); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func FuzzLineReader(f *testing.F) {
	lines := protocolSeeds(f)
	f.Add(lines, uint16(65535), uint8(255))
	f.Add(lines, uint16(300), uint8(0))
	f.Add(lines, uint16(100), uint8(7))
	for _, s := range []string{
		"",
		"\n\n",
		"{}\n{\"type\":\"stop\"}\n",
		"not json\n{\"type\":\"exited\",\"time\":\"2025-01-02T03:04:05Z\"}\r\n{\"type\":\"stopped\"",
		`{"type":"stop","timeout":"-1h"}` + "\n" + `{"type":"stop","timeout":"5"}` + "\n",
		`{"type":"ready","time":"2025-01-02T03:04:05+01:00","version":1,"ready":{"since":"0001-01-01T00:00:00Z"}}` + "\n",
		"{\"type\":\"x\"}\n{\"type\":\"y\"}\r\r\n{\"type\":\"z\"}",
		`{"type":"stop","timeout":"-2562047h47m16.854775808s","time":"9999-12-31T23:59:59-23:59"}` + "\n",
	} {
		f.Add([]byte(s), uint16(16), uint8(3))
		f.Add([]byte(s), uint16(64), uint8(255))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, chunk uint8) {
		lim := 2 + int(limit)
		rd := newLineReaderSize(&chunkReader{data: data, n: int(chunk) + 1}, lim)
		for i, raw := range splitLines(data) {
			m, err := rd.next()
			if len(raw)+1 > lim {
				// Over the limit: the stream ends here, and stays ended.
				if !errors.Is(err, errProtocol) || !errors.Is(err, bufio.ErrTooLong) {
					t.Fatalf("line %d of %d bytes, limit %d: got %+v, %v; want an errProtocol for its length", i+1, len(raw), lim, m, err)
				}
				if m, again := rd.next(); !errors.Is(again, bufio.ErrTooLong) {
					t.Fatalf("after the line over the limit: %+v, %v", m, again)
				}
				return
			}
			var want message
			if json.Unmarshal(bytes.TrimSuffix(raw, []byte{'\r'}), &want) != nil || want.Type == "" {
				if !errors.Is(err, errProtocol) {
					t.Fatalf("line %d, %q: got %+v, %v; want an errProtocol", i+1, raw, m, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("line %d, %q: %v", i+1, raw, err)
			}
			if got, want := encode(t, m), encode(t, want); !bytes.Equal(got, want) {
				t.Fatalf("line %d, %q: read as\n%s\nnot\n%s", i+1, raw, got, want)
			}
			checkRewrite(t, m)
		}
		if m, err := rd.next(); err != io.EOF {
			t.Fatalf("after the last line: %+v, %v; want io.EOF", m, err)
		}
	})
}

// checkRewrite checks that a message read, written again, reads back the
// same.
func checkRewrite(t *testing.T, m message) {
	t.Helper()
	if m.Time.IsZero() {
		m.Time = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) // writeMessage would set it
	}
	var b bytes.Buffer
	if err := writeMessage(&b, m); err != nil {
		t.Fatalf("a message read cannot be written again: %v\n%+v", err, m)
	}
	back, err := newLineReader(&b).next()
	if err != nil {
		t.Fatalf("a message written again does not read back: %v\n%s", err, b.Bytes())
	}
	if got, want := encode(t, back), encode(t, m); !bytes.Equal(got, want) {
		t.Fatalf("written again, a message reads back as\n%s\nnot\n%s", got, want)
	}
}

func encode(t *testing.T, m message) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encoding %+v: %v", m, err)
	}
	return b
}

// splitLines splits data as the protocol does: at each newline, the last
// line possibly without one.
func splitLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// chunkReader returns at most n bytes a read, as a pipe may.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[k:]
	return k, nil
}

// A line over the limit ends the stream: the part of it in the buffer is
// never taken for a line of its own, here a stop request.
func TestLineOverTheLimitEndsTheStream(t *testing.T) {
	long := `{"type":"stop"}` + string(bytes.Repeat([]byte{' '}, 100)) + "\n" + `{"type":"stop"}` + "\n"
	rd := newLineReaderSize(bytes.NewReader([]byte(long)), 64)
	for i := range 3 {
		if m, err := rd.next(); !errors.Is(err, errProtocol) || !errors.Is(err, bufio.ErrTooLong) {
			t.Fatalf("read %d: %+v, %v; want the line over the limit", i+1, m, err)
		}
	}
}
