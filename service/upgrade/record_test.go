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

// A record read back is the record written, its agents' rows decoded
// apart from the rest of the agents, and both apart from the rest;
// agents that do not decode, or whose rows do not match them, are an
// unusable record, named.
func TestHandoverRecordRoundTrip(t *testing.T) {
	dir := testdir.Temp(t)
	rec := &Record{Version: Version, PID: os.Getpid(), Profile: "p",
		Config: Config{Path: "agents.yaml", Source: []byte("agents: []\n")},
		Agents: []Agent{
			{ID: "a", Row: api.Agent{ID: "a", State: api.StateRunning, PID: 7}, Want: true, Leader: platform.Ref{Pid: 7, Start: 99},
				Tether: &Tether{Conn: 9, Version: 2}},
			{ID: "b", Row: api.Agent{ID: "b", State: api.StateStopped}},
		},
		Discard: []uintptr{11, 12}, Tethers: []uintptr{9}}
	path, err := write(dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b, []byte("\n")); lines != 4 {
		t.Errorf("the record in %d lines, want 4:\n%s", lines, b)
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if bytes.Contains(first, []byte(`"source":"`)) {
		t.Errorf("the config's source in the first line: %s", first)
	}
	if _, agentsLine, _ := bytes.Cut(rest, []byte("\n")); bytes.Contains(agentsLine, []byte(`"row"`)) {
		t.Errorf("the rows in the agents' line too: %s", agentsLine)
	}
	got, agents, err := Read(path, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 0 {
		t.Errorf("the agents were decoded before decodeAgents: %+v", got.Agents)
	}
	if len(got.Tethers) != 1 || got.Tethers[0] != 9 {
		t.Errorf("the tethers' descriptors read back %v, want [9]", got.Tethers)
	}
	rows, err := agents.DecodeRows()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != rec.Agents[0].Row || rows[1] != rec.Agents[1].Row {
		t.Errorf("rows read back %+v, wrote %+v and %+v", rows, rec.Agents[0].Row, rec.Agents[1].Row)
	}
	if err := got.DecodeAgents(agents); err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 2 || got.Agents[0].ID != "a" || got.Agents[0].Leader != rec.Agents[0].Leader ||
		got.Agents[0].Tether == nil || got.Agents[0].Tether.Conn != 9 || got.Agents[0].Row != rec.Agents[0].Row ||
		got.Agents[1].Row.State != api.StateStopped {
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

	// Records that are not four lines are refused whole.
	for _, body := range []string{
		`{"version":1,"profile":"p"}`,                                                   // its rows are missing
		`{"version":1,"profile":"p"}` + "\n[]",                                          // its agents are missing
		`{"version":1,"profile":"p"}` + "\n[]\n[]",                                      // its source is missing
		`{"version":1,"profile":"p"}` + "\n[]\n\"YQ==\"",                                // the rows or the agents are missing
		`{"version":1,"profile":"p","agents":[]}` + "\n[]\n[]\n\"YQ==\"",                // agents inside and apart
		`{"version":1,"profile":"p","config":{"source":"YQ=="}}` + "\n[]\n[]\n\"YQ==\"", // source inside and apart
		`{"version":1,"profile":"p"}` + "\n[]\n[]\n\"YQ==\"\n[]",                        // a line too many
	} {
		path := filepath.Join(dir, "mixed.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(path, "p"); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v, want ErrRecord", body, err)
		}
	}

	// Agents or rows that do not decode, or that do not match, are
	// found by decodeAgents.
	for _, body := range []string{
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":"a"}]` + "\n" + `[{"id":3}]` + "\n\"YQ==\"",
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":"a"}]` + "\n" + `[{"id":"a"}` + "\n\"YQ==\"",
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":3}]` + "\n" + `[{"id":"a"}]` + "\n\"YQ==\"",
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":"b"}]` + "\n" + `[{"id":"a"}]` + "\n\"YQ==\"",
		`{"version":1,"profile":"p"}` + "\n" + `[{"id":"a"},` + "\t" + `{"id":"b"}]` + "\n" + `[{"id":"a"}]` + "\n\"YQ==\"",
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
	if err := os.WriteFile(bad, []byte(`{"version":1,"profile":"p"}`+"\n[]\n[]\n{\"not\":\"bytes\"}"), 0o600); err != nil {
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
	body := `{"version":2,"profile":"p"}` + "\n[]\n[]\n\"YQ==\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(path, "p")
	if !errors.Is(err, ErrRecord) || !strings.Contains(err.Error(), "version 2; this tether reads version 1") {
		t.Errorf("a record of version 2: %v, want ErrRecord naming both versions", err)
	}
}

// The rows' and the agents' lines are each one JSON array, whatever
// reads them; this binary decodes their elements side by side, and reads
// a plain array too.
func TestHandoverAgentsSideBySide(t *testing.T) {
	var agents []Agent
	var rows []api.Agent
	for i := range 7 {
		id := fmt.Sprintf("a%d", i)
		agents = append(agents, Agent{ID: id, Want: i%2 == 0, DepErr: &api.Error{Code: api.CodeDependency, Message: "a tab\there,\tand a line\nend"},
			Tether: &Tether{Conn: uintptr(9 + i), Version: 2, Pending: []byte("{\"type\":\t")}})
		rows = append(rows, api.Agent{ID: id, State: api.StateRunning, PID: 100 + i, Error: &api.Error{Code: api.CodeSpawn, Message: "a tab\there, a comma,\tand a line\nend"}})
	}
	checkSideBySide(t, agents, `[{"id":"a0",`+"\t"+`"want":true},`+"\t"+`{"id":"a1"}]`)
	checkSideBySide(t, rows, `[{"id":"a0",`+"\t"+`"pid":3},`+"\t"+`{"id":"a1"}]`)
}

// checkSideBySide checks that elems, encoded by encodeSplit, decode as
// a JSON array does, split or not, and that spaced, a line with a tab
// of its own after a comma, is read whole.
func checkSideBySide[T any](t *testing.T, elems []T, spaced string) {
	t.Helper()
	line, err := encodeSplit(elems)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(line, []byte(agentsSep)); n != len(elems)-1 || bytes.ContainsAny(line, "\n") {
		t.Errorf("%d separators in %s, want %d and no line end", n, line, len(elems)-1)
	}
	// One plain array, as encoding/json writes it.
	plain, err := json.Marshal(elems)
	if err != nil {
		t.Fatal(err)
	}
	var want []T
	if err := json.Unmarshal(plain, &want); err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"side by side": line, "plain": plain, "spaced": []byte(spaced)} {
		var asArray []T
		if err := json.Unmarshal(raw, &asArray); err != nil {
			t.Errorf("%s: not a JSON array: %v", name, err)
		}
		got, err := decodeSplit[T](raw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, asArray) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, got, asArray)
		}
		if name != "spaced" && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", name, got, want)
		}
	}
	// A broken element breaks the line, split or not.
	broken := bytes.Replace(line, []byte(`"id":"a3"`), []byte(`"id":a3`), 1)
	if _, err := decodeSplit[T](broken); err == nil {
		t.Errorf("a broken element decoded")
	}
}
