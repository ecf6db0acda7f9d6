package wire

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// answer plays a waiting guardian on c: it reads one line and answers
// with reply, and returns the line it read.
func answer(t *testing.T, c net.Conn, reply string) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		_, _ = c.Write([]byte(reply + "\n"))
	}()
	return got
}

func TestQuery(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	defer theirs.Close()
	_ = ours.SetDeadline(time.Now().Add(10 * time.Second))
	want := Waiting{Identity: "alice@relay", Profile: "work", GuardianPID: 7, AgentPID: 8,
		Until: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	sent := answer(t, theirs, `{"type":"waiting","version":1,"waiting":`+string(b)+`}`)
	w, err := Query(ours)
	if err != nil {
		t.Fatal(err)
	}
	if w != want {
		t.Fatalf("Query = %+v, want %+v", w, want)
	}
	var q struct {
		Type    MsgType `json:"type"`
		Version int     `json:"version"`
	}
	if err := json.Unmarshal([]byte(<-sent), &q); err != nil || q.Type != MsgQuery || q.Version != Version {
		t.Fatalf("the query line decodes to %+v (%v), want type query, version %d", q, err, Version)
	}
}

// Anything but a waiting answer is an error, not an empty Waiting.
func TestQueryRefusesOtherAnswers(t *testing.T) {
	for _, reply := range []string{`{"type":"failed","version":1}`, `{"type":"waiting","version":1}`, `not json`} {
		ours, theirs := net.Pipe()
		_ = ours.SetDeadline(time.Now().Add(10 * time.Second))
		answer(t, theirs, reply)
		if w, err := Query(ours); err == nil {
			t.Errorf("answer %s: Query = %+v, want an error", reply, w)
		} else if reply[0] == '{' && !strings.Contains(err.Error(), "not a waiting guardian") {
			t.Errorf("answer %s: %v", reply, err)
		}
		ours.Close()
		theirs.Close()
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(1500 * time.Millisecond))
	if err != nil || string(b) != `"1.5s"` {
		t.Fatalf("Marshal = %s, %v; want \"1.5s\"", b, err)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"250ms"`), &d); err != nil || d.Duration() != 250*time.Millisecond {
		t.Fatalf("Unmarshal = %v, %v; want 250ms", d, err)
	}
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Fatal("a duration that does not parse was accepted")
	}
}
