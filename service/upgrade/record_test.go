package upgrade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/platform"
)

// A record read back is the record written, its agents decoded apart
// from the rest; agents that do not decode are an unusable record, named.
func TestHandoverRecordRoundTrip(t *testing.T) {
	dir := testdir.Temp(t)
	rec := &Record{Version: Version, PID: os.Getpid(), Profile: "p",
		Config: Config{Path: "agents.yaml", Source: []byte("agents: []\n")},
		Agents: []Agent{
			{ID: "a", Row: api.Agent{ID: "a", State: api.StateRunning, PID: 7}, Want: true, Leader: platform.Ref{Pid: 7, Start: 99},
				Tether: &Tether{Conn: 9, Version: 2}},
			{ID: "b", Row: api.Agent{ID: "b", State: api.StateStopped}},
		},
		Discard: []uintptr{11, 12}}
	path, err := write(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b, []byte("\n")); lines != 3 {
		t.Errorf("the record in %d lines, want 3:\n%s", lines, b)
	}
	if first, _, _ := bytes.Cut(b, []byte("\n")); bytes.Contains(first, []byte(`"source":"`)) {
		t.Errorf("the config's source in the first line: %s", first)
	}
	got, agents, err := Read(path, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 0 {
		t.Errorf("the agents were decoded before decodeAgents: %+v", got.Agents)
	}
	if err := got.DecodeAgents(agents); err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 2 || got.Agents[0].ID != "a" || got.Agents[0].Leader != rec.Agents[0].Leader ||
		got.Agents[0].Tether == nil || got.Agents[0].Tether.Conn != 9 || got.Agents[1].Row.State != api.StateStopped {
		t.Errorf("agents read back %+v, wrote %+v", got.Agents, rec.Agents)
	}
	if _, err := got.ParseConfig(); err != nil {
		t.Fatalf("the config read back: %v", err)
	}
	if got.Version != Version || len(got.Discard) != 2 || got.Discard[1] != 12 || string(got.Config.Source) != "agents: []\n" {
		t.Errorf("read back %+v", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the record is still there after it was read: %v", err)
	}

	// Records that are not three lines are refused whole.
	for _, body := range []string{
		`{"version":1,"profile":"p"}`,                                               // its agents are missing
		`{"version":1,"profile":"p"}` + "\n[]",                                      // its source is missing
		`{"version":1,"profile":"p","agents":[]}` + "\n[]\n\"YQ==\"",                // agents inside and apart
		`{"version":1,"profile":"p","config":{"source":"YQ=="}}` + "\n[]\n\"YQ==\"", // source inside and apart
		`{"version":1,"profile":"p"}` + "\n[]\n\"YQ==\"\n[]",                        // a line too many
	} {
		path := filepath.Join(dir, "mixed.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(path, "p"); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v, want ErrRecord", body, err)
		}
	}

	// Agents that do not decode are found by decodeAgents.
	for _, body := range []string{
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":3}]` + "\n\"YQ==\"",
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":"a"}` + "\n\"YQ==\"",
	} {
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, agents, err := Read(bad, "p")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if err := got.DecodeAgents(agents); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: agents that do not decode: %v, want ErrRecord", body, err)
		}
	}

	// A source that does not decode is found by config.
	bad := filepath.Join(dir, "source.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"profile":"p"}`+"\n[]\n{\"not\":\"bytes\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, err = Read(bad, "p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := got.ParseConfig(); !errors.Is(err, ErrRecord) {
		t.Errorf("a source that is not a string: %v, want ErrRecord", err)
	}
}

// A record of a version this binary does not read is refused, its
// version and the one this binary reads named.
func TestHandoverRecordUnknownVersion(t *testing.T) {
	path := filepath.Join(testdir.Temp(t), "handover.json")
	body := `{"version":2,"profile":"p"}` + "\n[]\n\"YQ==\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(path, "p")
	if !errors.Is(err, ErrRecord) || !strings.Contains(err.Error(), "version 2; this tether reads version 1") {
		t.Errorf("a record of version 2: %v, want ErrRecord naming both versions", err)
	}
}

// The agents' line is one JSON array, whatever reads it; this binary
// decodes its elements side by side, and reads a plain array too.
func TestHandoverAgentsSideBySide(t *testing.T) {
	var agents []Agent
	for i := range 7 {
		id := fmt.Sprintf("a%d", i)
		agents = append(agents, Agent{ID: id, Want: i%2 == 0,
			Row:    api.Agent{ID: id, State: api.StateRunning, PID: 100 + i, Error: &api.Error{Code: api.CodeSpawn, Message: "a tab\there, a comma,\tand a line\nend"}},
			Tether: &Tether{Conn: uintptr(9 + i), Version: 2, Pending: []byte("{\"type\":\t")}})
	}
	line, err := encodeAgents(agents)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(line, []byte(agentsSep)); n != len(agents)-1 || bytes.ContainsAny(line, "\n") {
		t.Errorf("%d separators in %s, want %d and no line end", n, line, len(agents)-1)
	}
	// One plain array, as encoding/json writes it.
	plain, err := json.Marshal(agents)
	if err != nil {
		t.Fatal(err)
	}
	var want []Agent
	if err := json.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	// An element with a tab of its own after a comma: the split
	// breaks it, and the line is read whole.
	spaced := []byte(`[{"id":"a0",` + "\t" + `"want":true},` + "\t" + `{"id":"a1"}]`)
	for name, raw := range map[string][]byte{"side by side": line, "plain": plain, "spaced": spaced} {
		var asArray []Agent
		if err := json.Unmarshal(raw, &asArray); err != nil {
			t.Errorf("%s: not a JSON array: %v", name, err)
		}
		rec := &Record{}
		if err := rec.DecodeAgents(&RecordAgents{path: "r", raw: raw}); err != nil {
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
	if err := (&Record{}).DecodeAgents(&RecordAgents{path: "r", raw: broken}); !errors.Is(err, ErrRecord) {
		t.Errorf("a broken element: %v, want ErrRecord", err)
	}
}
