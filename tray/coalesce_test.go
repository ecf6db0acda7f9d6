package tray

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCoalescerPerKey(t *testing.T) {
	c := NewCoalescer()
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	if ok, held := c.Admit("alice/cleanup", at(0)); !ok || held != 0 {
		t.Fatalf("first: %v %d", ok, held)
	}
	for _, s := range []float64{0, 1, 29.9} {
		if ok, _ := c.Admit("alice/cleanup", at(s)); ok {
			t.Errorf("a second alice/cleanup at %vs was admitted", s)
		}
	}
	// Other keys are not held back by this one.
	if ok, _ := c.Admit("bob/cleanup", at(1)); !ok {
		t.Error("bob/cleanup held back by alice/cleanup")
	}
	if ok, _ := c.Admit("alice/crash_loop", at(1)); !ok {
		t.Error("alice/crash_loop held back by alice/cleanup")
	}
	ok, held := c.Admit("alice/cleanup", at(30))
	if !ok || held != 3 {
		t.Errorf("after 30 s: admitted %v with %d held, want true and 3", ok, held)
	}
	if ok, held := c.Admit("alice/cleanup", at(61)); !ok || held != 0 {
		t.Errorf("the held count was not reset: %v %d", ok, held)
	}
}

func TestCoalescerPerMinute(t *testing.T) {
	c := NewCoalescer()
	admitted := 0
	// A storm: 100 agents failing within 10 s.
	for i := range 100 {
		if ok, _ := c.Admit(fmt.Sprintf("agent%d/crash_loop", i), t0.Add(time.Duration(i)*100*time.Millisecond)); ok {
			admitted++
		}
	}
	if admitted != c.PerMinute {
		t.Errorf("%d of a storm of 100 admitted, want %d", admitted, c.PerMinute)
	}
	// A minute after the first, there is room again.
	if ok, _ := c.Admit("late/cleanup", t0.Add(time.Minute)); !ok {
		t.Error("nothing admitted a minute later")
	}
	// Over ten minutes, never more than PerMinute in any minute.
	c = NewCoalescer()
	var times []time.Time
	for i := range 600 {
		now := t0.Add(time.Duration(i) * time.Second)
		if ok, _ := c.Admit(fmt.Sprintf("k%d", i%7), now); ok {
			times = append(times, now)
		}
	}
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < time.Minute {
				n++
			}
		}
		if n > c.PerMinute {
			t.Fatalf("%d admitted in the minute from %v", n, times[i])
		}
	}
	if len(c.last) > 7 {
		t.Errorf("the coalescer remembers %d keys, want at most the 7 in use", len(c.last))
	}
}

func TestWithHeld(t *testing.T) {
	n := Notice{Title: "t", Body: "b"}
	if got := withHeld(n, 0).Body; got != "b" {
		t.Errorf("0: %q", got)
	}
	if got := withHeld(n, 1).Body; !strings.Contains(got, "1 similar notification was held back") {
		t.Errorf("1: %q", got)
	}
	if got := withHeld(n, 4).Body; !strings.Contains(got, "4 similar notifications were held back") {
		t.Errorf("4: %q", got)
	}
}
