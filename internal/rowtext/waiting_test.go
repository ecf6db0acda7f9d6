package rowtext

import (
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

func TestWaiting(t *testing.T) {
	since := time.Date(2026, 12, 5, 10, 2, 0, 0, time.UTC)
	limit := since.Add(60 * time.Second)
	for _, c := range []struct {
		w    api.Waiting
		want string
	}{
		{api.Waiting{For: api.WaitLog, What: "listening on", Since: since, Deadline: limit}, "waiting for its log line 'listening on' (12 s of 60 s)"},
		{api.Waiting{For: api.WaitNotify, Since: since, Deadline: limit}, "waiting for its READY=1 (notify) (12 s of 60 s)"},
		{api.Waiting{For: api.WaitFD, What: "3", Since: since, Deadline: limit}, "waiting for a line on its descriptor 3 (12 s of 60 s)"},
		{api.Waiting{For: api.WaitTCP, What: "127.0.0.1:8080", Since: since, Deadline: limit}, "waiting for 127.0.0.1:8080 to accept a connection (12 s of 60 s)"},
		{api.Waiting{For: api.WaitHTTP, What: "http://127.0.0.1:8080/health", Since: since, Deadline: limit}, "waiting for a 2xx answer from http://127.0.0.1:8080/health (12 s of 60 s)"},
		{api.Waiting{For: api.WaitExec, What: "test -e /x", Since: since, Deadline: limit}, "waiting for 'test -e /x' to exit 0 (12 s of 60 s)"},
		{api.Waiting{For: api.WaitAgents, Agents: []string{"db", "ollama"}, Since: since}, "waiting for db, ollama (12 s)"},
		{api.Waiting{For: "quorum", What: "3", Since: since}, "waiting for quorum 3 (12 s)"},
	} {
		if got := WaitingNow(c.w, since.Add(12*time.Second+400*time.Millisecond)); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	long := api.Waiting{For: api.WaitNotify, Since: since, Deadline: since.Add(10 * time.Minute)}
	if got := Progress(long, since.Add(185*time.Second)); got != "3 min 5 s of 10 min" {
		t.Errorf("a long wait: %q", got)
	}
}

func TestNote(t *testing.T) {
	since := time.Date(2026, 12, 5, 10, 2, 0, 0, time.UTC)
	w := &api.Waiting{For: api.WaitLog, What: "up", Since: since, Deadline: since.Add(time.Minute)}
	for _, c := range []struct {
		a    api.Agent
		now  time.Time
		want string
	}{
		{api.Agent{Waiting: w}, since.Add(5 * time.Second), "waiting for its log line 'up' (5 s of 60 s)"},
		{api.Agent{Waiting: w}, time.Time{}, "waiting for its log line 'up' (up to 60 s)"},
		{api.Agent{Waiting: w, Status: "loading  3/5"}, time.Time{}, "waiting for its log line 'up' (up to 60 s); loading 3/5"},
		{api.Agent{Waiting: &api.Waiting{For: api.WaitAgents, Agents: []string{"db"}, Since: since}, Status: "waiting for db"}, time.Time{}, "waiting for db"},
		{api.Agent{Status: "held by vps since 10:02"}, time.Time{}, "held by vps since 10:02"},
		{api.Agent{}, time.Time{}, ""},
	} {
		if got := Note(c.a, c.now); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
