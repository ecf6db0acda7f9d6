//go:build linux

package guardian

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// TestLineReaderKeepsWhatItRead: a read cut by a deadline in the middle
// of a line keeps what it had, and a reader that starts with rest reads
// the line whole: a tether changes owner without losing or cutting a
// message.
func TestLineReaderKeepsWhatItRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.WriteString(`{"type":"status","detail":"a"}` + "\n" + `{"type":"sta`); err != nil {
		t.Fatal(err)
	}
	rd := newLineReader(r)
	if m, err := rd.next(); err != nil || m.Detail != "a" {
		t.Fatalf("first line: %+v, %v", m, err)
	}
	_ = r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := rd.next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("cut read: %v, want a deadline error", err)
	}
	rest := rd.rest()
	if string(rest) != `{"type":"sta` {
		t.Fatalf("rest %q", rest)
	}
	_ = r.SetReadDeadline(time.Time{})
	if _, err := w.WriteString(`tus","detail":"b"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	rd2 := newLineReaderAfter(rest, r)
	if m, err := rd2.next(); err != nil || m.Type != wire.MsgStatus || m.Detail != "b" {
		t.Fatalf("line across owners: %+v, %v", m, err)
	}
}

// handOver detaches s and attaches its tether again in this process, as
// the successor of an upgrade does after execve, and returns the new
// session with its first event when the guardian answers attach.
func handOver(t *testing.T, s *Session) *Session {
	t.Helper()
	h, err := s.Detach()
	if err != nil {
		t.Fatalf("Detach: %v", err)
	}
	h.Release()
	ClaimChild(s.Ready().GuardianPID)
	proc, err := ChildProcess(s.Ready().GuardianPID)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Attach(s.spec, Attachment{Conn: s.conn, Proc: proc, Version: s.Version(), Ready: s.Ready(), Pending: h.Pending, Owner: platform.Self()})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { stopSession(t, s2) })
	select {
	case <-s2.Attached():
	case <-time.After(10 * time.Second):
		t.Fatal("the guardian did not answer attach")
	}
	return s2
}

// An upgrade of the owner: the session is detached, its tether attached
// again; the guardian answers attach with the same agent, the tree lives
// on, and a stop through the new session leaves nothing.
func TestAttachAfterDetach(t *testing.T) {
	e := newWorld(t)
	s, err := Start(context.Background(), e.spec("handover", "polite"))
	if err != nil {
		t.Fatal(err)
	}
	rs := politeTree(e, s)
	r := s.Ready()
	s2 := handOver(t, s)
	ev := <-s2.Events()
	if ev.Type != EventAttached || ev.Ready == nil || ev.Ready.AgentPID != r.AgentPID || ev.Ready.GuardianPID != r.GuardianPID || ev.Ready.Pending {
		t.Fatalf("first event after attach: %+v (ready %+v), want attached with agent %d", ev, ev.Ready, r.AgentPID)
	}
	if a := alive(rs); len(a) != len(rs) {
		t.Fatalf("the handover ended part of the tree: alive %v of %v", a, rs)
	}
	if err := s2.Stop(context.Background(), 0); err != nil {
		t.Fatalf("Stop after attach: %v", err)
	}
	waitGone(t, rs, 100*time.Millisecond)
	if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
		t.Fatalf("after stop: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
	}
}

// A detach that does not lead to a handover: Resume reads on, and
// nothing was lost meanwhile: the agent's exit and the teardown that
// happened while nobody read are reported.
func TestDetachResume(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("resume", "env"))
	e.waitAnnounced(map[string]int{"leader": 1})
	h, err := s.Detach()
	if err != nil {
		t.Fatal(err)
	}
	agent, err := refOf(s.Ready().AgentPID)
	if err != nil {
		t.Fatal(err)
	}
	guardian, err := refOf(s.Ready().GuardianPID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(agent.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The guardian tears down and exits while nobody reads its tether.
	waitGone(t, []procRef{agent, guardian}, 10*time.Second)
	h.Resume()
	var got []EventType
	for ev := range s.Events() {
		got = append(got, ev.Type)
	}
	if len(got) != 2 || got[0] != EventExited || got[1] != EventStopped {
		t.Fatalf("events after resume %v, want [exited stopped]", got)
	}
}

// A session whose guardian has ended cannot be detached: Detach says so
// at once, as often as it is asked, and never waits for a reader that is
// gone.
func TestDetachAfterTheEnd(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("ended", "env"))
	e.waitAnnounced(map[string]int{"leader": 1})
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	for range s.Events() {
	}
	done := make(chan error, 2)
	go func() {
		for range 2 {
			_, err := s.Detach()
			done <- err
		}
	}()
	for i := range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, ErrSessionEnded) {
				t.Fatalf("detach %d of an ended session: %v, want ErrSessionEnded", i+1, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("detach %d of an ended session still waits after 10 s", i+1)
		}
	}
}
