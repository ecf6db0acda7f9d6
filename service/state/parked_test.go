package state

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
)

var parkedAt = time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)

func parkedRecord() *Parked {
	return &Parked{Since: parkedAt, Code: api.CodeCrashLoop, Message: "ended 6 times in a row", Config: "f00d"}
}

// A parked record survives a reopening, and a copy of the state does not
// share it.
func TestParkedIsDurable(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	if err := s.Update(func(st *State) { st.Agents["a"] = Agent{Enabled: true, Parked: parkedRecord()} }); err != nil {
		t.Fatal(err)
	}
	cp := s.State()
	cp.Agents["a"].Parked.Message = "changed"
	if got := s.State().Agents["a"].Parked; !reflect.DeepEqual(got, parkedRecord()) {
		t.Fatalf("changing a copy changed the store: %+v", got)
	}
	s2 := open(t, dir)
	if got := s2.State().Agents["a"]; s2.Err() != nil || !got.Enabled || !reflect.DeepEqual(got.Parked, parkedRecord()) {
		t.Fatalf("after reopening: %+v (%v)", got, s2.Err())
	}
}

// A change of intent after the parking clears it: in memory at once,
// from the journal alone after a crash (the file still holds the record),
// and in the file once the journal is folded. A parking written after
// the change stays.
func TestIntentClearsParked(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	if err := s.Update(func(st *State) {
		st.Agents["a"] = Agent{Enabled: true, Parked: parkedRecord()}
		st.Agents["b"] = Agent{Enabled: true, Parked: parkedRecord()}
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetEnabled("a", true); err != nil {
		t.Fatal(err)
	}
	check := func(what string, st State) {
		t.Helper()
		if a, b := st.Agents["a"], st.Agents["b"]; a.Parked != nil || !a.Enabled || b.Parked == nil {
			t.Errorf("%s: a %+v, b %+v; want a unparked and b parked", what, a, b)
		}
	}
	check("in memory", s.State())
	s2 := open(t, dir) // as after a crash: the record in the file, the line in the journal
	check("reopened", s2.State())
	read, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("Read", read)
	if err := s.Update(func(*State) {}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(s.Path()); strings.Count(string(data), `"parked"`) != 1 {
		t.Errorf("after folding, the file should hold b's record alone:\n%s", data)
	}
	check("folded", open(t, dir).State())

	// Parked again after the line: the record stays.
	if err := s.Update(func(st *State) {
		a := st.Agents["a"]
		a.Parked = parkedRecord()
		st.Agents["a"] = a
	}); err != nil {
		t.Fatal(err)
	}
	if got := open(t, dir).State().Agents["a"]; got.Parked == nil {
		t.Errorf("a parking written after the change of intent was dropped: %+v", got)
	}
}
