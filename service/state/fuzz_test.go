package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/testdir"
)

// stateSeeds are state files as the service writes them and as a crash,
// a hand edit or another version could leave them.
var stateSeeds = []string{
	`{
  "version": 1,
  "agents": {
    "alice": {
      "enabled": true,
      "last_run": {
        "started": "2025-01-02T03:04:05.123456789Z",
        "stopped": "2025-01-02T04:04:05+01:00",
        "pid": 4242,
        "exit": "killed by signal: killed",
        "error": {"code": "cleanup_failed", "message": "pid 4243 survived"}
      }
    },
    "bob": {"enabled": false},
    "": {"enabled": true, "last_run": null}
  },
  "intent_seq": 17
}
`,
	`{"version": 1, "agents": {}}`,
	`{"version": 1, "agents": {"a": {"enabled": true}}}` + "\n\n",
	"",
	"\n \n",
	"{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"enabled\": tru}\n  }\n}\n",
	"{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\"enab",
	`{"version": 1, "agents": {}}` + "\n}\n",
	`{"version": 1, "agents": {}}{}`,
	`{"version": 1, "agents": {"a": {"enabeld": true}}}`,
	`{"Version": 1, "agents": {}}`,
	`{"version": 1, "agents": {"a": {}, "a": {"enabled": true}}}`,
	`{"version": 1, "agents": {"a": {"last_run": {"pid": "12"}}}}`,
	`{"version": 1, "agents": {"a": {"last_run": {"started": "yesterday"}}}}`,
	`{"version": 1, "agents": {"a": {"last_run": {"exit": {}}}}}`,
	`{"version": 1, "agents": {"a": null}}`,
	`{"version": 1e0, "agents": {}, "intent_seq": -1}`,
	`{"agents": {}, "version": 1}`,
	`{"version": 1, "agents": {"a": {"enabled": true, "parked": {"since": "2026-01-02T03:04:05Z", "code": "crash_loop", "message": "ended 6 times", "config": "f00d", "last": {"code": "exited", "message": "exit status 1"}}}}}`,
	`{"version": 2, "agents": {}}`,
	// As Update writes them: read without the walk.
	"{\n  \"version\": 1,\n  \"agents\": {}\n}\n",
	"{\n  \"version\": 1,\n  \"agents\": {\n    \"a\": {\n      \"enabled\": true,\n      \"last_run\": {\n        \"started\": \"2026-01-02T03:04:05Z\",\n        \"pid\": 7\n      }\n    }\n  },\n  \"intent_seq\": 3\n}\n",
	"{\n  \"version\": 1,\n  \"agents\": null\n}\n",
	"[]",
	"null",
	"{\"version\": 1, \"agents\": {\"\xff\\ud800\": {}}}",
}

func FuzzDecodeState(f *testing.F) {
	for _, s := range stateSeeds {
		f.Add([]byte(s))
	}
	dir := testdir.Temp(f)
	path := filepath.Join(dir, FileName)

	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		st, err := decode(path, data)
		if !bytes.Equal(data, in) {
			t.Fatal("decode modified its input")
		}
		if err != nil {
			checkCorrupt(t, err, path, data)
		} else {
			checkDecoded(t, data, st)
		}
		// What is read without the walk, the walk reads the same.
		if fast, ok := asWritten(data); ok {
			walked, werr := walkDecode(path, data)
			if werr != nil || !reflect.DeepEqual(fast, walked) {
				t.Fatalf("read as written: %+v; the walk: %+v, %v", fast, walked, werr)
			}
		}
		checkStateOnDisk(t, dir, data, st, err)
	})
}

// checkCorrupt checks that err points at a fault inside data.
func checkCorrupt(t *testing.T, err error, path string, data []byte) *CorruptError {
	t.Helper()
	ce, ok := errors.AsType[*CorruptError](err)
	if !ok || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v (%T) is not a *CorruptError", err, err)
	}
	if ce.Path != path || ce.Err == nil {
		t.Errorf("%v: path %q, cause %v", err, ce.Path, ce.Err)
	}
	if ce.Offset < 0 || ce.Offset > int64(len(data)) {
		t.Fatalf("%v: offset %d outside a file of %d bytes", err, ce.Offset, len(data))
	}
	if want := 1 + bytes.Count(data[:ce.Offset], []byte{'\n'}); ce.Line != want {
		t.Errorf("%v: line %d, but offset %d is on line %d", err, ce.Line, ce.Offset, want)
	}
	return ce
}

// checkDecoded checks a state decoded from data: encoding/json agrees
// with it, and it written out as Update writes it decodes back the same.
func checkDecoded(t *testing.T, data []byte, st State) {
	t.Helper()
	if st.Version != Version || st.Agents == nil {
		t.Fatalf("decoded %+v: version %d is not %d, or no agents", st, st.Version, Version)
	}
	enc := encodeState(t, st)
	var plain State
	if err := json.Unmarshal(data, &plain); err != nil {
		t.Fatalf("decoded, but encoding/json refuses it: %v", err)
	}
	if plain.Agents == nil {
		plain.Agents = map[string]Agent{}
	}
	if got := encodeState(t, plain); !bytes.Equal(got, enc) {
		t.Errorf("encoding/json reads another state:\n%s\nnot\n%s", got, enc)
	}
	back, err := decode("rewritten", enc)
	if err != nil {
		t.Fatalf("the state written out again does not decode: %v\n%s", err, enc)
	}
	if got := encodeState(t, back); !bytes.Equal(got, enc) {
		t.Errorf("the state written out again decodes to another:\n%s\nnot\n%s", got, enc)
	}
}

// encodeState encodes st as Update writes it.
func encodeState(t *testing.T, st State) []byte {
	t.Helper()
	data, err := encode(st)
	if err != nil {
		t.Fatalf("encoding %+v: %v", st, err)
	}
	return data
}

// checkStateOnDisk puts data in dir as the state file and checks that Read
// and a Store judge it as decode did, and that neither changes it.
func checkStateOnDisk(t *testing.T, dir string, data []byte, want State, wantErr error) {
	t.Helper()
	os.Remove(intentPath(dir))
	writeState(t, dir, string(data))
	path := filepath.Join(dir, FileName)
	st, err := Read(dir)
	sameOutcome(t, "Read", st, err, want, wantErr)

	s := open(t, dir)
	err = s.Err()
	sameOutcome(t, "Open", s.State(), err, want, wantErr)
	if err != nil {
		if uerr := s.Update(func(*State) { t.Error("Update called its function on a corrupt state") }); !errors.Is(uerr, ErrCorrupt) {
			t.Errorf("Update = %v, want ErrCorrupt", uerr)
		}
		if serr := s.SetEnabled("a", true); !errors.Is(serr, ErrCorrupt) {
			t.Errorf("SetEnabled = %v, want ErrCorrupt", serr)
		}
	}
	s.Close()
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the state file changed on disk (%v)", err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{FileName}) {
		t.Errorf("files in the state directory: %v", names)
	}
}

// sameOutcome checks that a read of the state ended as decode did: the
// same fault, or the same state.
func sameOutcome(t *testing.T, what string, st State, err error, want State, wantErr error) {
	t.Helper()
	if wantErr != nil {
		if !reflect.DeepEqual(err, wantErr) {
			t.Errorf("%s: error %v, want %v", what, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, but the file decodes", what, err)
	}
	if got, w := encodeState(t, st), encodeState(t, want); !bytes.Equal(got, w) {
		t.Errorf("%s: state\n%s\nwant\n%s", what, got, w)
	}
}

// journalSeeds are intent journals as SetEnabled writes them, cut by a
// crash, and broken.
var journalSeeds = []string{
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":2,"id":"b","enabled":false}` + "\n" + `{"seq":5,"id":"a","enabled":false}` + "\n",
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":2,"id":"b","ena`,
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":2,"id":"b","enabled":tru}` + "\n",
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":2,"id":"b","enabeld":true}` + "\n",
	`{"seq":1,"enabled":true}` + "\n",
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":1,"id":"b","enabled":true}` + "\n",
	`{"seq":1,"id":"a","enabled":true}` + "\n" + `{"seq":2,"id":"b","enabled":true}{}` + "\n",
	`{"seq":1,"id":"a"` + "\n" + `{"seq":2,"id":"b","enabled":true}` + "\n",
	"\n",
	"{\n",
	"",
	`{"SEQ":1,"ID":"a","Enabled":true,"id":"b"}` + "\r\n",
}

func FuzzIntentJournal(f *testing.F) {
	for _, s := range journalSeeds {
		f.Add([]byte(s), uint64(0))
		f.Add([]byte(s), uint64(2))
	}
	dir := testdir.Temp(f)
	path := intentPath(dir)

	f.Fuzz(func(t *testing.T, data []byte, stateSeq uint64) {
		in := bytes.Clone(data)
		j := journal{path: path, changes: map[string]intentLine{}}
		err := j.parse(data)
		if !bytes.Equal(data, in) {
			t.Fatal("parse modified its input")
		}
		var lines []intentLine
		if err != nil {
			checkJournalFault(t, err, path, data)
		} else {
			lines = checkJournal(t, &j, data)
		}
		checkJournalOnDisk(t, dir, data, stateSeq, lines, err)
	})
}

// checkJournalFault checks that a journal's error names the first line
// that is whole and bad: the lines before it parse, and it ends in a
// newline (a torn last line is never a fault).
func checkJournalFault(t *testing.T, err error, path string, data []byte) {
	t.Helper()
	ce := checkCorrupt(t, err, path, data)
	if ce.Offset > 0 && data[ce.Offset-1] != '\n' {
		t.Errorf("%v: offset %d is not the start of a line", err, ce.Offset)
	}
	if !bytes.Contains(data[ce.Offset:], []byte{'\n'}) {
		t.Errorf("%v: the torn last line is reported", err)
	}
	before := journal{path: path, changes: map[string]intentLine{}}
	if perr := before.parse(data[:ce.Offset]); perr != nil || before.torn {
		t.Errorf("%v: the lines before it do not parse whole: %v", err, perr)
	}
}

// checkJournal checks a journal that parsed: every whole line is a change
// with a growing sequence number, the last one of each id counts, only a
// last line without a newline is torn, and the lines written out again
// read back the same. It returns the lines.
func checkJournal(t *testing.T, j *journal, data []byte) []intentLine {
	t.Helper()
	whole := data[:bytes.LastIndexByte(data, '\n')+1]
	if torn := len(whole) < len(data); j.torn != torn || j.size != int64(len(whole)) {
		t.Errorf("torn %v, size %d; want %v, %d", j.torn, j.size, torn, len(whole))
	}
	var (
		lines []intentLine
		last  = map[string]intentLine{}
		again []byte
	)
	for raw := range bytes.Lines(whole) {
		var l intentLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %q was taken, but does not decode: %v", raw, err)
		}
		if l.ID == "" || (len(lines) > 0 && l.Seq <= lines[len(lines)-1].Seq) {
			t.Errorf("line %q was taken after %+v", raw, lines)
		}
		lines = append(lines, l)
		last[l.ID] = l
		line, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		again = append(append(again, line...), '\n')
	}
	if !reflect.DeepEqual(j.changes, last) {
		t.Errorf("changes %+v, want %+v", j.changes, last)
	}
	var seq uint64
	if len(lines) > 0 {
		seq = lines[len(lines)-1].Seq
	}
	if j.seq != seq {
		t.Errorf("seq %d after %+v", j.seq, lines)
	}
	back := journal{path: j.path, changes: map[string]intentLine{}}
	if err := back.parse(again); err != nil || !reflect.DeepEqual(back.changes, j.changes) || back.seq != j.seq {
		t.Errorf("written out again, the journal reads back as %+v (%v), not %+v", back.changes, err, j.changes)
	}
	return lines
}

// checkJournalOnDisk puts data in dir as the journal, beside a state file
// that folded everything up to stateSeq, and checks that Read and a Store
// replay it (the changes past stateSeq, the last of each id) or refuse it
// as parse did, without changing either file.
func checkJournalOnDisk(t *testing.T, dir string, data []byte, stateSeq uint64, lines []intentLine, wantErr error) {
	t.Helper()
	base := State{Version: Version, IntentSeq: stateSeq, Agents: map[string]Agent{
		"a": {Enabled: true}, "b": {Enabled: false},
	}}
	stateData := encodeState(t, base)
	writeState(t, dir, string(stateData))
	writeJournal(t, dir, string(data))

	want := base.clone()
	for _, l := range lines {
		if l.Seq > stateSeq {
			a := want.Agents[l.ID]
			a.Enabled = l.Enabled
			want.Agents[l.ID] = a
		}
		want.IntentSeq = max(want.IntentSeq, l.Seq)
	}
	st, err := Read(dir)
	sameOutcome(t, "Read", st, err, want, wantErr)

	s := open(t, dir)
	err = s.Err()
	if wantErr != nil {
		if !reflect.DeepEqual(err, wantErr) {
			t.Errorf("Open: error %v, want %v", err, wantErr)
		}
		if uerr := s.Update(func(*State) { t.Error("Update called its function on a corrupt journal") }); !errors.Is(uerr, ErrCorrupt) {
			t.Errorf("Update = %v, want ErrCorrupt", uerr)
		}
		if serr := s.SetEnabled("a", false); !errors.Is(serr, ErrCorrupt) {
			t.Errorf("SetEnabled = %v, want ErrCorrupt", serr)
		}
	} else {
		sameOutcome(t, "Open", s.State(), err, want, nil)
	}
	s.Close()
	for name, content := range map[string][]byte{FileName: stateData, IntentFile: data} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s changed on disk (%v)", name, err)
		}
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{IntentFile, FileName}) {
		t.Errorf("files in the state directory: %s", strings.Join(names, ", "))
	}
}
