package top

import (
	"bytes"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// TestPaces: + goes from off to the slowest pace and on to the fastest,
// where it stays; - goes back and ends off.
func TestPaces(t *testing.T) {
	var up []time.Duration
	for every := time.Duration(0); len(up) < 6; {
		every = faster(every)
		up = append(up, every)
	}
	want := []time.Duration{30 * time.Second, 10 * time.Second, 5 * time.Second, 2 * time.Second, time.Second, time.Second}
	for i := range want {
		if up[i] != want[i] {
			t.Fatalf("+ from off: %v, want %v", up, want)
		}
	}
	every := time.Second
	for range 5 {
		every = slower(every)
	}
	if every != 0 {
		t.Errorf("five - from 1s: %v, want off", every)
	}
	if got := faster(3 * time.Second); got != 2*time.Second {
		t.Errorf("+ from --interval 3s: %v, want 2s", got)
	}
}

// TestRefreshDrawsOnlyChanges: a refresh that finds the same costs
// writes nothing; one of an old pace is dropped and schedules nothing.
func TestRefreshDrawsOnlyChanges(t *testing.T) {
	m := testModel(false)
	out := m.scr.out.(*bytes.Buffer)
	m.pace(time.Second)
	u := map[string]*api.Usage{"alpha": {Source: "cgroup", CPUSeconds: 0.5, MemoryBytes: 1 << 20}}
	if cmd := m.measured(usageMsg{usage: u, auto: true, gen: m.refreshGen}); cmd == nil {
		t.Fatal("the current refresh did not come due again")
	}
	m.View()
	drawn := out.Len()
	if cmd := m.measured(usageMsg{usage: u, auto: true, gen: m.refreshGen}); cmd == nil {
		t.Fatal("the current refresh did not come due again")
	}
	m.View()
	if out.Len() != drawn {
		t.Errorf("the same costs drew %d bytes more", out.Len()-drawn)
	}
	old := m.refreshGen
	m.pace(0)
	if cmd := m.measured(usageMsg{usage: u, auto: true, gen: old}); cmd != nil {
		t.Error("a refresh of the pace before came due again after - turned it off")
	}
	if cmd := m.refresh(refreshMsg{gen: old}); cmd != nil {
		t.Error("a refresh of the pace before measured again")
	}
}
