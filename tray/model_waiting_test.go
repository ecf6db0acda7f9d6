package tray

import (
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/wire"
)

// While no service runs, the menu says which agents outlived it and wait
// to be adopted; once one runs, it does not.
func TestMenuShowsAgentsWaitingToBeAdopted(t *testing.T) {
	until := time.Date(2026, 1, 2, 10, 32, 1, 0, time.Local)
	in := input{Conn: notRunning, Waiting: []wire.Waiting{{Identity: "alice@relay", AgentPID: 123, Until: until}}}
	var found *item
	m := build(in)
	for i, it := range m.Items {
		if strings.Contains(it.Title, "1 agent waits for the service") {
			found = &m.Items[i]
		}
	}
	if found == nil || found.Hidden || !strings.Contains(found.Tooltip, "alice@relay (pid 123): adoptable until 10:32:01") {
		t.Fatalf("the waiting agents' item: %+v", found)
	}
	in.Conn, in.Status = connected, api.Status{}
	for _, it := range build(in).Items {
		if strings.Contains(it.Title, "for the service") && !it.Hidden {
			t.Fatalf("shown while a service runs: %+v", it)
		}
	}
}
