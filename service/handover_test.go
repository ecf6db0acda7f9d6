package service

import (
	"bytes"
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
	for v := MinHandoverVersion; v <= HandoverVersion; v++ {
		rec := &handoverRecord{Version: v, PID: os.Getpid(), Profile: "p",
			Config: handoverConfig{Path: "agents.yaml", Source: []byte("agents: []\n")},
			Agents: []agentHandover{
				{ID: "a", Row: api.Agent{ID: "a", State: api.StateRunning, PID: 7}, Want: true, Leader: platform.Ref{Pid: 7, Start: 99},
					Tether: &tetherHandover{Conn: 9, Version: 2}},
				{ID: "b", Row: api.Agent{ID: "b", State: api.StateStopped}},
			},
			Discard: []uintptr{11, 12}}
		if v >= agentsApart {
			rec.Parsed, rec.ParsedBy = []byte("[ {\"ID\": \"a\"} ]"), "build"
		}
		path, err := writeHandover(dir, rec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if lines := bytes.Count(bytes.TrimSpace(b), []byte("\n")) + 1; (v >= agentsApart) != (lines == 3) || (v < agentsApart) != (lines == 1) {
			t.Errorf("version %d in %d lines:\n%s", v, lines, b)
		}
		got, agents, err := readHandover(path, "p")
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if len(got.Agents) != 0 {
			t.Errorf("version %d: the agents were decoded before decodeAgents: %+v", v, got.Agents)
		}
		if err := got.decodeAgents(agents); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if len(got.Agents) != 2 || got.Agents[0].ID != "a" || got.Agents[0].Leader != rec.Agents[0].Leader ||
			got.Agents[0].Tether == nil || got.Agents[0].Tether.Conn != 9 || got.Agents[1].Row.State != api.StateStopped {
			t.Errorf("version %d: agents read back %+v, wrote %+v", v, got.Agents, rec.Agents)
		}
		if got.Version != v || len(got.Discard) != 2 || got.Discard[1] != 12 || string(got.Config.Source) != "agents: []\n" {
			t.Errorf("version %d: read back %+v", v, got)
		}
		if wantParsed := map[bool]string{true: `[{"ID":"a"}]`}[v >= agentsApart]; string(got.Parsed) != wantParsed || (v >= agentsApart && got.ParsedBy != "build") {
			t.Errorf("version %d: the parsed config read back %q by %q, want %q", v, got.Parsed, got.ParsedBy, wantParsed)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("version %d: the record is still there after it was read: %v", v, err)
		}
	}

	// Records that are not what their version says are refused whole.
	for _, body := range []string{
		`{"version":3,"profile":"p"}`,                      // its agents are missing
		`{"version":3,"profile":"p","agents":[]}` + "\n[]", // inside and apart
		`{"version":2,"profile":"p","agents":[]}` + "\n[]", // apart before version 3
		`{"version":3,"profile":"p"}` + "\n[]\n[]\n[]",     // a line too many
	} {
		path := filepath.Join(dir, "mixed.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readHandover(path, "p"); !errors.Is(err, ErrHandoverRecord) {
			t.Errorf("%s: %v, want ErrHandoverRecord", body, err)
		}
	}

	// Agents that do not decode are found by decodeAgents, either way.
	for _, body := range []string{
		`{"version":2,"profile":"p","agents":[{"id":3}]}`,
		`{"version":3,"profile":"p"}` + "\n" + `[{"id":3}]`,
		`{"version":3,"profile":"p"}` + "\n" + `[{"id":"a"}`,
	} {
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, agents, err := readHandover(bad, "p")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := got.decodeAgents(agents); !errors.Is(err, ErrHandoverRecord) {
			t.Errorf("%s: agents that do not decode: %v, want ErrHandoverRecord", body, err)
		}
	}
}
