package service

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/platform"
)

// A record read back is the record written, its agents decoded apart
// from the rest; agents that do not decode are an unusable record, named.
func TestHandoverRecordRoundTrip(t *testing.T) {
	dir := testdir.Temp(t)
	rec := &handoverRecord{Version: HandoverVersion, PID: os.Getpid(), Profile: "p",
		Config: handoverConfig{Path: "agents.yaml", Source: []byte("agents: []\n")},
		Agents: []agentHandover{
			{ID: "a", Row: api.Agent{ID: "a", State: api.StateRunning, PID: 7}, Want: true, Leader: platform.Ref{Pid: 7, Start: 99},
				Tether: &tetherHandover{Conn: 9, Version: 2}},
			{ID: "b", Row: api.Agent{ID: "b", State: api.StateStopped}},
		},
		Discard: []uintptr{11, 12}}
	path, err := writeHandover(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	got, agents, err := readHandover(path, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 0 {
		t.Errorf("the agents were decoded before decodeAgents: %+v", got.Agents)
	}
	if err := got.decodeAgents(agents); err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 2 || got.Agents[0].ID != "a" || got.Agents[0].Leader != rec.Agents[0].Leader ||
		got.Agents[0].Tether == nil || got.Agents[0].Tether.Conn != 9 || got.Agents[1].Row.State != api.StateStopped {
		t.Errorf("agents read back %+v, wrote %+v", got.Agents, rec.Agents)
	}
	if len(got.Discard) != 2 || got.Discard[1] != 12 || string(got.Config.Source) != "agents: []\n" {
		t.Errorf("read back %+v", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the record is still there after it was read: %v", err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":2,"profile":"p","agents":[{"id":3}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, agents, err = readHandover(bad, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := got.decodeAgents(agents); !errors.Is(err, ErrHandoverRecord) {
		t.Errorf("agents that do not decode: %v, want ErrHandoverRecord", err)
	}
}
