package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// Removed agents stop together: eight agents that ignore SIGTERM, each
// with a stop timeout of 1 s, are gone in about 1 s, not in 8.
func TestReloadStopsRemovedAgentsTogether(t *testing.T) {
	w := newWorld(t, "p", nil)
	var b strings.Builder
	b.WriteString("  - id: keep\n    command: AGENT, sleep]\n    autostart: true\n")
	keep := b.String()
	for i := range 8 {
		fmt.Fprintf(&b, "  - id: s%d\n    command: AGENT, stubborn]\n    autostart: true\n    stop_timeout: 1s\n", i)
	}
	w.yaml(b.String())
	c := w.controller(Options{})
	for i := range 8 {
		waitIgnoresTERM(t, waitState(t, c, fmt.Sprintf("s%d", i), api.StateRunning).PID)
	}
	w.yaml(keep)
	began := time.Now()
	if _, err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("the reload took %v", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("the reload took %v: the removed agents were stopped one after another", took.Round(time.Millisecond))
	}
	if st := c.Status(); len(st.Agents) != 1 {
		t.Errorf("after the reload: %+v", st.Agents)
	}
}

// A reload stops a dependent before what it depends on, and starts a
// dependency before its dependents: for the agents it changes and for
// those it removes.
func TestReloadKeepsDependencyOrder(t *testing.T) {
	w := newWorld(t, "p", nil)
	const dbEntry = `  - id: db
    command: AGENT, sleep]
    autostart: true
`
	const apiEntry = `  - id: api
    command: AGENT, stubborn]
    autostart: true
    stop_timeout: 1s
    requires: [db]
`
	const goneEntries = `  - id: cache
    command: AGENT, sleep]
    autostart: true
  - id: worker
    command: AGENT, stubborn]
    autostart: true
    stop_timeout: 1s
    after: [cache]
`
	w.yaml(dbEntry + apiEntry + goneEntries)
	c := w.controller(Options{})
	waitIgnoresTERM(t, waitState(t, c, "api", api.StateRunning).PID)
	waitIgnoresTERM(t, waitState(t, c, "worker", api.StateRunning).PID)
	waitState(t, c, "db", api.StateRunning)
	waitState(t, c, "cache", api.StateRunning)
	events, cancel := c.Subscribe(nil, 0)
	defer cancel()
	var seen []string // "id state", in the order published
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for ev := range events {
			if ev.Type == api.EventAgent {
				seen = append(seen, ev.Agent.ID+" "+string(ev.Agent.State))
			}
		}
	}()
	// db and api change; cache and worker are removed.
	w.yaml(dbEntry + "    stop_timeout: 2s\n" + apiEntry + "    env: {V: \"2\"}\n")
	if _, err := c.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-collected
	at := func(what string) int {
		for i, s := range seen {
			if s == what {
				return i
			}
		}
		t.Fatalf("no %q among the events: %v", what, seen)
		return -1
	}
	order := func(first, then string) {
		if at(first) > at(then) {
			t.Errorf("%q came after %q: %v", first, then, seen)
		}
	}
	order("api stopped", "db stopping")
	order("worker stopped", "cache stopping")
	// The last start of api comes after db runs again.
	lastStart := -1
	for i, s := range seen {
		if s == "api starting" {
			lastStart = i
		}
	}
	if lastStart < at("db stopped") || lastStart < at("db running") {
		t.Errorf("api started before db ran again: %v", seen)
	}
	if a := waitState(t, c, "api", api.StateRunning); a.Error != nil {
		t.Errorf("api after the reload: %+v", a)
	}
}
