package service

import (
	"context"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
)

// An upgrade's successor answers a status from the rows handed over
// before its controller runs, and holds every other request until the
// controller answers it: nothing refused, nothing answered from a
// controller that is not there.
func TestTakeoverAPIAnswersStatusAndHoldsTheRest(t *testing.T) {
	w := newWorld(t, "p", nil)
	w.yaml(" []\n")
	rows := []api.Agent{{ID: "a", State: api.StateRunning, PID: 4242}}
	up := &api.Upgrade{ID: "u1", Took: time.Millisecond}
	ta := newTakeoverAPI(w.paths, api.Service{Version: "v", Upgrade: up}, rows)

	st := ta.Status()
	if len(st.Agents) != 1 || st.Agents[0].PID != 4242 || st.Service == nil || st.Service.Upgrade.ID != "u1" || st.Profile != "p" {
		t.Fatalf("status before the controller runs: %+v", st)
	}
	// A stop of an unknown agent waits for the controller, which says
	// it does not know it.
	stopped := make(chan error, 1)
	go func() {
		_, err := ta.Stop(context.Background(), "nope")
		stopped <- err
	}()
	select {
	case err := <-stopped:
		t.Fatalf("the stop was answered before the controller ran: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	// One whose client goes away meanwhile ends with it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ta.Start(ctx, "a", true); err != context.Canceled {
		t.Errorf("a start whose client went away: %v, want %v", err, context.Canceled)
	}

	c := w.controller(Options{})
	ta.run(c)
	select {
	case err := <-stopped:
		if !isCode(err, api.CodeNotFound) {
			t.Errorf("the stop held, once the controller runs: %v, want not_found", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stop held was never answered")
	}
	if st := ta.Status(); len(st.Agents) != 0 {
		t.Errorf("status once the controller runs is not the controller's (which runs no agent): %+v", st.Agents)
	}
}
