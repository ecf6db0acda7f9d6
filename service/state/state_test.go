package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testdir"
	"github.com/tether-dev/tether/platform"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, platform.OpenAppendNoFollow)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// symlink makes link point at target, or skips the test where links
// cannot be made or are not seen as links (Wine shows a Unix link to a
// Windows program as what it points at).
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("cannot create a symbolic link here: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Skipf("a symbolic link made here is not seen as one (%v, %v)", fi, err)
	}
}

func writeState(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestMissingFileIsEmptyState(t *testing.T) {
	s := open(t, testdir.Temp(t))
	if err := s.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	if got, want := s.State(), (State{Version: Version, Agents: map[string]Agent{}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("State = %+v, want %+v", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	started := time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.UTC)
	want := State{Version: Version, Agents: map[string]Agent{
		"alice": {Enabled: true, LastRun: &Run{Started: started, PID: 4242}},
		"bob": {LastRun: &Run{
			Started: started, Stopped: started.Add(time.Minute), Exit: "killed by signal: killed",
			Error: &RunError{Code: api.CodeCleanupFailed, Message: "tree not empty"},
		}},
		"carol": {Enabled: true},
	}}
	if err := s.Update(func(st *State) { *st = want.clone() }); err != nil {
		t.Fatal(err)
	}
	if got := s.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("State after Update = %+v, want %+v", got, want)
	}
	s2 := open(t, dir)
	if err := s2.Err(); err != nil {
		t.Fatal(err)
	}
	if got := s2.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("State after reopening = %+v, want %+v", got, want)
	}
	data, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), `"stopped"`) != 1 {
		t.Errorf("a zero Stopped time should be left out of the file:\n%s", data)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(s.Path()); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("state file mode = %v (%v), want 0600", fi.Mode(), err)
		}
	}
}

func TestStateIsACopy(t *testing.T) {
	s := open(t, testdir.Temp(t))
	if err := s.Update(func(st *State) {
		st.Agents["a"] = Agent{Enabled: true, LastRun: &Run{PID: 1, Error: &RunError{Code: api.CodeSpawn}}}
	}); err != nil {
		t.Fatal(err)
	}
	st := s.State()
	st.Agents["a"].LastRun.PID = 2
	st.Agents["a"].LastRun.Error.Code = "changed"
	st.Agents["b"] = Agent{}
	got := s.State()
	if a := got.Agents["a"]; a.LastRun.PID != 1 || a.LastRun.Error.Code != api.CodeSpawn || len(got.Agents) != 1 {
		t.Fatalf("changing a copy changed the store: %+v", got)
	}
}

func TestUpdateNormalizes(t *testing.T) {
	s := open(t, testdir.Temp(t))
	if err := s.Update(func(st *State) { st.Version = 7; st.Agents = nil }); err != nil {
		t.Fatal(err)
	}
	if got := s.State(); got.Version != Version || got.Agents == nil {
		t.Fatalf("State = %+v, want version %d and a non-nil map", got, Version)
	}
}

func TestConcurrentUpdates(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	const workers, each = 8, 20
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if err := s.Update(func(st *State) {
					a := st.Agents["n"]
					if a.LastRun == nil {
						a.LastRun = &Run{}
					}
					a.LastRun.PID++
					st.Agents["n"] = a
				}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := open(t, dir).State().Agents["n"].LastRun.PID; got != workers*each {
		t.Fatalf("counter = %d after %d serialized increments", got, workers*each)
	}
}

// A file that is not a valid state is reported with its line and left
// exactly as it is (I4).
func TestMalformedFile(t *testing.T) {
	const good = "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"enabled\": true}\n  }\n}\n"
	for _, tc := range []struct {
		name    string
		content string
		line    int
		msg     string // in the error's text
	}{
		{"empty", "", 1, "empty"},
		{"blank", "\n \n", 1, "empty"},
		{"bad JSON", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"enabled\": tru}\n  }\n}\n", 4, "invalid character"},
		{"truncated", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"enab", 4, "end of file"},
		{"trailing garbage", good + "\n}\n", 8, "after the JSON object"},
		{"second object", good + "{}", 7, "after the JSON object"},
		{"unknown field", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\n      \"enabeld\": true\n    }\n  }\n}\n", 5, `unknown field "enabeld" in agents.a`},
		{"unknown top-level field", "{\n  \"agents\": {},\n  \"version\": 1,\n  \"extra\": 2\n}\n", 4, `unknown field "extra"`},
		{"field in other case", "{\n  \"Version\": 1,\n  \"agents\": {}\n}\n", 2, `unknown field "Version"`},
		{"duplicate agent", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {},\n    \"a\": {\"enabled\": true}\n  }\n}\n", 5, `duplicate key "a"`},
		{"wrong type", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\n      \"last_run\": {\n        \"pid\": \"12\"\n      }\n    }\n  }\n}\n", 6, "agents.a.last_run.pid"},
		{"bad time", "{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"last_run\": {\n      \"started\": \"yesterday\"}}\n  }\n}\n", 5, "agents.a.last_run.started"},
		{"object for a string", "{\"version\": 1, \"agents\": {\"a\": {\"last_run\": {\"exit\": {}}}}}", 1, "want a string, found an object"},
		{"array", "[]", 1, "want an object, found an array"},
		{"null", "null", 1, "want an object, found null"},
		{"null agent", "{\n  \"version\": 1,\n  \"agents\": {\"a\": null}\n}\n", 3, "agents.a: want an object, found null"},
		{"no version", "{\n  \"agents\": {}\n}\n", 1, "version 0 is not supported"},
		{"unknown version", "{\n  \"agents\": {},\n  \"version\": 2\n}\n", 3, "version 2 is not supported (this tether reads version 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testdir.Temp(t)
			writeState(t, dir, tc.content)
			path := filepath.Join(dir, FileName)
			sum := fileSum(t, path)

			s := open(t, dir)
			err := s.Err()
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Err = %v, want a *CorruptError", err)
			}
			if ce.Path != path || ce.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Err = %v (path %s, line %d); want path %s, line %d, text %q", err, ce.Path, ce.Line, path, tc.line, tc.msg)
			}
			if got := ce.Line; got != 1+strings.Count(tc.content[:ce.Offset], "\n") {
				t.Errorf("line %d does not match offset %d", got, ce.Offset)
			}
			if !reflect.DeepEqual(s.State(), emptyState()) {
				t.Errorf("State = %+v, want the empty state", s.State())
			}

			called := false
			err = s.Update(func(*State) { called = true })
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Update = %v, want ErrCorrupt", err)
			}
			if called {
				t.Error("Update called its function on a corrupt state")
			}
			if fileSum(t, path) != sum {
				t.Error("the malformed file changed on disk")
			}
			if names := dirNames(t, dir); !reflect.DeepEqual(names, []string{FileName}) {
				t.Errorf("files in the state directory: %v", names)
			}
			if !errors.Is(s.Err(), ErrCorrupt) {
				t.Errorf("Err after the refused Update = %v", s.Err())
			}

			// Fixed by hand, then reloaded.
			writeState(t, dir, good)
			if err := s.Reload(); err != nil {
				t.Fatalf("Reload after the fix: %v", err)
			}
			if err := s.Err(); err != nil {
				t.Fatalf("Err after Reload = %v", err)
			}
			if !s.State().Agents["a"].Enabled {
				t.Errorf("State after Reload = %+v", s.State())
			}
			if err := s.Update(func(st *State) { st.Agents["b"] = Agent{} }); err != nil {
				t.Fatalf("Update after the fix: %v", err)
			}
		})
	}
}

// A file broken while the store is open is not overwritten by the next
// Update either; the last good state stays in memory.
func TestCorruptedAfterLoad(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	if err := s.Update(func(st *State) { st.Agents["a"] = Agent{Enabled: true} }); err != nil {
		t.Fatal(err)
	}
	writeState(t, dir, `{"version": 1, "agents": {`)
	sum := fileSum(t, s.Path())
	if err := s.Update(func(st *State) { st.Agents["b"] = Agent{} }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Update = %v, want ErrCorrupt", err)
	}
	if fileSum(t, s.Path()) != sum {
		t.Fatal("the malformed file changed on disk")
	}
	if !errors.Is(s.Err(), ErrCorrupt) {
		t.Fatalf("Err = %v, want ErrCorrupt", s.Err())
	}
	if st := s.State(); !st.Agents["a"].Enabled || len(st.Agents) != 1 {
		t.Fatalf("State = %+v, want the last good state", st)
	}
}

// A valid change made by hand is the base of the next Update, not lost.
func TestUpdateKeepsChangeOnDisk(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	if err := s.Update(func(st *State) { st.Agents["a"] = Agent{Enabled: true} }); err != nil {
		t.Fatal(err)
	}
	writeState(t, dir, `{"version": 1, "agents": {"a": {"enabled": false}, "c": {"enabled": true}}}`)
	if err := s.Update(func(st *State) { st.Agents["b"] = Agent{Enabled: true} }); err != nil {
		t.Fatal(err)
	}
	want := map[string]Agent{"a": {}, "b": {Enabled: true}, "c": {Enabled: true}}
	if got := open(t, dir).State().Agents; !reflect.DeepEqual(got, want) {
		t.Fatalf("agents = %+v, want %+v", got, want)
	}
}

func TestSymlinkedStateFileIsRefused(t *testing.T) {
	dir := testdir.Temp(t)
	target := filepath.Join(testdir.Temp(t), "elsewhere.json")
	content := []byte(`{"version": 1, "agents": {"a": {"enabled": true}}}`)
	if err := os.WriteFile(target, content, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, FileName)
	symlink(t, target, link)

	s := open(t, dir)
	var ue *UnsafePathError
	if err := s.Err(); !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) || ue.Path != link {
		t.Fatalf("Err = %v, want an *UnsafePathError for %s", err, link)
	}
	if len(s.State().Agents) != 0 {
		t.Errorf("state read through a link: %+v", s.State())
	}
	if err := s.Update(func(st *State) { st.Agents["b"] = Agent{} }); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Update = %v, want ErrUnsafe", err)
	}
	checkLinkUntouched(t, link, target, content)
}

func TestStateFileReplacedByLinkAfterLoad(t *testing.T) {
	dir := testdir.Temp(t)
	s := open(t, dir)
	if err := s.Update(func(st *State) { st.Agents["a"] = Agent{} }); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(testdir.Temp(t), "elsewhere.json")
	content := []byte("not yours\n")
	if err := os.WriteFile(target, content, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, FileName)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, link)
	if err := s.Update(func(st *State) { st.Agents["b"] = Agent{} }); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Update = %v, want ErrUnsafe", err)
	}
	checkLinkUntouched(t, link, target, content)
}

func checkLinkUntouched(t *testing.T, link, target string, content []byte) {
	t.Helper()
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != string(content) {
		t.Errorf("the link's target changed: %q %v", got, err)
	}
}

func TestDirectoryIsCreatedUserOnly(t *testing.T) {
	dir := filepath.Join(testdir.Temp(t), "tether", "default")
	s := open(t, dir)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("state directory: %v %v", fi, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode = %v, want 0700", fi.Mode().Perm())
	}
	if err := s.Update(func(st *State) { st.Agents["a"] = Agent{} }); err != nil {
		t.Fatal(err)
	}
}

func TestUnsafeDirectoryIsRefused(t *testing.T) {
	base := testdir.Temp(t)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, platform.OpenAppendNoFollow); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Open(a regular file) = %v, want ErrUnsafe", err)
	}
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	symlink(t, real, link)
	if _, err := Open(link, platform.OpenAppendNoFollow); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Open(a link to a directory) = %v, want ErrUnsafe", err)
	}
}

// A temporary file left by a crash is never read, and the next successful
// write removes it.
func TestStaleTempFileIsIgnored(t *testing.T) {
	dir := testdir.Temp(t)
	stale := filepath.Join(dir, tempPrefix+"123456"+tempSuffix)
	if err := os.WriteFile(stale, []byte(`{"version": 1, "agents": {"ghost": {"ena`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir)
	if err := s.Err(); err != nil || len(s.State().Agents) != 0 {
		t.Fatalf("with only a stale temp file: Err = %v, State = %+v", err, s.State())
	}
	writeState(t, dir, `{"version": 1, "agents": {"a": {"enabled": true}}}`)
	s = open(t, dir)
	if err := s.Err(); err != nil || !reflect.DeepEqual(s.State().Agents, map[string]Agent{"a": {Enabled: true}}) {
		t.Fatalf("beside a stale temp file: Err = %v, State = %+v", err, s.State())
	}
	if err := s.Update(func(st *State) { st.Agents["b"] = Agent{} }); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !reflect.DeepEqual(names, []string{FileName}) {
		t.Errorf("files after a write: %v, want only %s", names, FileName)
	}
}

// The file Update writes is read without the walk; one that says the
// same in another spelling, or that the walk refuses, is not.
func TestStateReadAsWritten(t *testing.T) {
	st := State{Version: Version, IntentSeq: 4, Agents: map[string]Agent{
		"a": {Enabled: true, LastRun: &Run{Started: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), PID: 7, Exit: "exit status 1"}},
		"b": {Parked: &Parked{Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Code: api.CodeCrashLoop, Message: "m", Config: "c"}},
	}}
	data, err := encode(st)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := asWritten(data); !ok || !reflect.DeepEqual(got, st) {
		t.Errorf("the file as written: %+v, %v; want %+v read without the walk", got, ok, st)
	}
	compact, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string][]byte{
		"another spelling":   compact,
		"another version":    bytes.Replace(data, []byte(`"version": 1`), []byte(`"version": 2`), 1),
		"a key given twice":  bytes.Replace(data, []byte(`"intent_seq": 4`), []byte(`"intent_seq": 4, "intent_seq": 4`), 1),
		"a key in capitals":  bytes.Replace(data, []byte(`"enabled"`), []byte(`"Enabled"`), 1),
		"no agents":          []byte("{\n  \"version\": 1,\n  \"agents\": null\n}\n"),
		"trailing data":      append(bytes.Clone(data), "{}\n"...),
		"without a line end": bytes.TrimSuffix(data, []byte("\n")),
	} {
		if _, ok := asWritten(other); ok {
			t.Errorf("%s: read without the walk:\n%s", name, other)
		}
	}
	// The walk reads the other spelling as the same state.
	if got, err := decode("p", compact); err != nil || !reflect.DeepEqual(got, st) {
		t.Errorf("the compact file: %+v, %v; want %+v", got, err, st)
	}
}
