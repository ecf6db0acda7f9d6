package tray

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

func failedNotice(id string) notice {
	var d detector
	n, _ := d.agent(agent(id, api.StateFailed, 0, &api.Error{Code: api.CodeSpawn, Message: "no such file"}))
	return n
}

// named reports which of ids some notice of ns names (title or body).
func named(ns []notice, ids []string) (missing []string) {
	for _, id := range ids {
		if !slices.ContainsFunc(ns, func(n notice) bool {
			return slices.Contains(strings.FieldsFunc(n.Title+"\n"+n.Body, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == ':' }), id)
		}) {
			missing = append(missing, id)
		}
	}
	return missing
}

// TestCoalescerBurst: eight agents failing at once make three bubbles of
// their own and one summary naming the other five; none is lost.
func TestCoalescerBurst(t *testing.T) {
	c := newCoalescer()
	var ids []string
	var shown []notice
	for i := range 8 {
		id := fmt.Sprintf("agent%d", i)
		ids = append(ids, id)
		if n := failedNotice(id); c.admit(n, t0.Add(time.Duration(i)*time.Millisecond)) {
			shown = append(shown, n)
		}
	}
	if len(shown) != c.Burst {
		t.Errorf("%d bubbles of their own, want %d", len(shown), c.Burst)
	}
	if !c.pending() {
		t.Fatal("nothing gathered")
	}
	s, ok := c.summary()
	if !ok || !strings.HasPrefix(s.Title, "tether: 5 more agents failed: agent3, agent4") {
		t.Fatalf("summary %+v", s)
	}
	if s.Agent != "" || s.Subject == "" || len(s.Actions) != 1 || len(s.Actions[0].Do.IDs) != 5 {
		t.Errorf("summary: agent %q, subject %q, actions %+v; want no agent, a subject, Start again for the five", s.Agent, s.Subject, s.Actions)
	}
	if missing := named(append(shown, s), ids); len(missing) > 0 {
		t.Errorf("never named: %v", missing)
	}
	if _, ok := c.summary(); ok || c.pending() {
		t.Error("an unchanged summary is offered again")
	}
	// A newer notice of an agent with a bubble of its own replaces it:
	// no room taken, not gathered.
	if !c.admit(failedNotice("agent1"), t0.Add(time.Second)) || len(c.sent) != c.Burst || c.pending() {
		t.Error("a newer notice of agent1 was gathered, or took room")
	}
	// The service, the user's own actions: never gathered.
	if !c.admit(lostNotice("", true), t0.Add(time.Second)) {
		t.Error("the lost-service notice was gathered")
	}
	// Another failure within the minute takes the summary's bubble (the
	// same subject: one bubble, replaced), which names only what is new:
	// the five were announced already.
	if c.admit(failedNotice("late"), t0.Add(2*time.Second)) {
		t.Error("a ninth failure in the minute got a bubble of its own")
	}
	s2, ok := c.summary()
	if !ok || s2.Subject != s.Subject || s2.Title != "tether: 1 more agent failed: late" || strings.Contains(s2.Body, "agent3") {
		t.Errorf("grown summary %+v, was %+v", s2, s)
	}
	// The same agent again: named once, for its newest notice.
	var d detector
	crash, _ := d.agent(agent("late", api.StateFailed, 0, &api.Error{Code: api.CodeCrashLoop, Message: "m"}))
	c.admit(failedNotice("late2"), t0.Add(3*time.Second))
	c.admit(crash, t0.Add(3*time.Second))
	s3, _ := c.summary()
	if strings.Count(s3.Body, "late") != 2 || !strings.Contains(s3.Body, "1 agent keeps crashing: late") || s3.Urgency != urgencyCritical {
		t.Errorf("summary after a newer notice of the same agent: %+v", s3)
	}
	// A minute later the burst is over: own bubbles again, and the next
	// summary is a new bubble.
	later := t0.Add(2 * time.Minute)
	for i := range c.Burst {
		if !c.admit(failedNotice(fmt.Sprintf("b%d", i)), later) {
			t.Errorf("notice %d of a new burst was gathered", i)
		}
	}
	c.admit(failedNotice("b9"), later)
	if s4, _ := c.summary(); s4.Subject == s.Subject || !strings.HasPrefix(s4.Title, "tether: 1 more agent failed: b9") {
		t.Errorf("new burst's summary %+v (the old one was %q)", s4, s.Subject)
	}
}

// TestCoalescerStorm: a hundred agents over ten seconds; at most Burst
// bubbles of their own in any window, and every agent named.
func TestCoalescerStorm(t *testing.T) {
	c := newCoalescer()
	var ids []string
	var shown []notice
	var times []time.Time
	for i := range 100 {
		id := fmt.Sprintf("a%d", i)
		ids = append(ids, id)
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		if n := failedNotice(id); c.admit(n, now) {
			shown = append(shown, n)
			times = append(times, now)
		}
		if i%10 == 0 {
			if s, ok := c.summary(); ok {
				shown = append(shown, s)
			}
		}
	}
	if s, ok := c.summary(); ok {
		shown = append(shown, s)
	}
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < c.Window {
				n++
			}
		}
		if n > c.Burst {
			t.Fatalf("%d bubbles of their own in the window from %v", n, times[i])
		}
	}
	if missing := named(shown, ids); len(missing) > 0 {
		t.Errorf("never named: %v", missing)
	}
}

// A summary's verbs agree with how many agents they are about.
func TestSummaryGrammar(t *testing.T) {
	var ns []notice
	for _, n := range []struct{ id, kind string }{
		{"a", kindCrashLoop}, {"b", kindContention}, {"c", kindContention}, {"d", kindCleanup},
	} {
		ns = append(ns, notice{Key: n.id + "/" + n.kind, Agent: n.id})
	}
	body := summarize(ns, 1).Body
	for _, want := range []string{"1 agent keeps crashing: a", "2 agents cannot get their identity: b, c", "1 agent could not be cleaned up: d"} {
		if !strings.Contains(body, want) {
			t.Errorf("summary %q, want %q", body, want)
		}
	}
	body = summarize([]notice{{Key: "a/" + kindCrashLoop, Agent: "a"}, {Key: "b/" + kindCrashLoop, Agent: "b"}, {Key: "c/" + kindContention, Agent: "c"}}, 2).Body
	for _, want := range []string{"2 agents keep crashing: a, b", "1 agent cannot get its identity: c"} {
		if !strings.Contains(body, want) {
			t.Errorf("summary %q, want %q", body, want)
		}
	}
}
