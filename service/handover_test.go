package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
			// Compacted into its line.
			rec.Parsed, rec.ParsedBy = []byte("[ {\"ID\":\n \"a\"} ]"), "build"
		}
		path, err := writeHandover(dir, rec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		wantLines := 1
		switch {
		case v >= sourceApart:
			wantLines = 4
		case v >= agentsApart:
			wantLines = 3
		}
		if lines := bytes.Count(bytes.TrimSpace(b), []byte("\n")) + 1; lines != wantLines {
			t.Errorf("version %d in %d lines, want %d:\n%s", v, lines, wantLines, b)
		}
		if first, _, _ := bytes.Cut(b, []byte("\n")); v >= sourceApart && bytes.Contains(first, []byte(`"source":"`)) {
			t.Errorf("version %d: the config's source in the first line: %s", v, first)
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
		if _, err := got.config(); err != nil {
			t.Fatalf("version %d: the config read back: %v", v, err)
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
		`{"version":3,"profile":"p"}`,                                               // its agents are missing
		`{"version":3,"profile":"p","agents":[]}` + "\n[]",                          // inside and apart
		`{"version":2,"profile":"p","agents":[]}` + "\n[]",                          // apart before version 3
		`{"version":3,"profile":"p"}` + "\n[]\n[]\n[]",                              // a line too many
		`{"version":5,"profile":"p"}` + "\n[]",                                      // its source is missing
		`{"version":5,"profile":"p","config":{"source":"YQ=="}}` + "\n[]\n\"YQ==\"", // inside and apart
		`{"version":5,"profile":"p"}` + "\n[]\n\"YQ==\"\n[]\n[]",                    // a line too many
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

	// A source that does not decode is found by config.
	bad := filepath.Join(dir, "source.json")
	if err := os.WriteFile(bad, []byte(`{"version":5,"profile":"p"}`+"\n[]\n{\"not\":\"bytes\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, err := readHandover(bad, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.config(); !errors.Is(err, ErrHandoverRecord) {
		t.Errorf("a source that is not a string: %v, want ErrHandoverRecord", err)
	}
}

// The agents' line is one JSON array, whatever reads it; this binary
// decodes its elements side by side, and reads a line of any writer.
func TestHandoverAgentsSideBySide(t *testing.T) {
	var agents []agentHandover
	for i := range 7 {
		id := fmt.Sprintf("a%d", i)
		agents = append(agents, agentHandover{ID: id, Want: i%2 == 0,
			Row:    api.Agent{ID: id, State: api.StateRunning, PID: 100 + i, Error: &api.Error{Code: api.CodeSpawn, Message: "a tab\there, a comma,\tand a line\nend"}},
			Tether: &tetherHandover{Conn: uintptr(9 + i), Version: 2, Pending: []byte("{\"type\":\t")}})
	}
	line, err := encodeAgents(agents)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(line, []byte(agentsSep)); n != len(agents)-1 || bytes.ContainsAny(line, "\n") {
		t.Errorf("%d separators in %s, want %d and no line end", n, line, len(agents)-1)
	}
	// Written before: one plain array.
	plain, err := json.Marshal(agents)
	if err != nil {
		t.Fatal(err)
	}
	var want []agentHandover
	if err := json.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	// An element with a tab of its own after a comma: the split
	// breaks it, and the line is read whole.
	spaced := []byte(`[{"id":"a0",` + "\t" + `"want":true},` + "\t" + `{"id":"a1"}]`)
	for name, raw := range map[string][]byte{"side by side": line, "plain": plain, "spaced": spaced} {
		var asArray []agentHandover
		if err := json.Unmarshal(raw, &asArray); err != nil {
			t.Errorf("%s: not a JSON array: %v", name, err)
		}
		rec := &handoverRecord{}
		if err := rec.decodeAgents(&recordAgents{path: "r", raw: raw}); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(rec.Agents, asArray) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, rec.Agents, asArray)
		}
		if name != "spaced" && !reflect.DeepEqual(rec.Agents, want) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, rec.Agents, want)
		}
	}
	// A broken element is an unusable record, split or not.
	broken := bytes.Replace(line, []byte(`"id":"a3"`), []byte(`"id":a3`), 1)
	if err := (&handoverRecord{}).decodeAgents(&recordAgents{path: "r", raw: broken}); !errors.Is(err, ErrHandoverRecord) {
		t.Errorf("a broken element: %v, want ErrHandoverRecord", err)
	}
}
