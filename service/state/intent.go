package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
)

// IntentFile is the name of the intent journal inside the state directory.
//
// A change of intent (SetEnabled) is one line appended to the journal and
// synced: a single small write and one fsync, about a fifth of the cost of
// rewriting the state file, and never queued behind a write of run
// records. The next Update folds the journal into the state file and
// empties it.
//
// Every line carries a sequence number, and the state file records the
// last number it folded in (intent_seq); loading replays only the lines
// past it. So a crash between writing the state file and emptying the
// journal replays nothing twice, and a line is never read against a state
// newer than itself.
//
// A line is the newest word on an agent's intent: it also clears the
// agent's parked record (Agent.Parked) in the state it applies to, since
// whoever started or stopped the agent since it was parked has decided
// for it. (Every Update folds the journal first, so a record written by
// an Update is never older than the lines it folded.)
//
// A crash in the middle of an append leaves a last line without its
// newline. That change was never acknowledged; it is dropped, and cut
// from the file before the next append. Any other line that does not parse
// makes the journal malformed: it is reported (a *CorruptError) and left as
// it is, like the state file.
const IntentFile = "intent.log"

// intentLine is one line of the journal.
type intentLine struct {
	Seq     uint64 `json:"seq"`
	ID      string `json:"id"`
	Enabled bool   `json:"enabled"`
}

// journal is the in-memory side of the intent journal. Store.jmu guards it.
type journal struct {
	path       string
	openAppend AppendOpener
	f          *os.File // open for appending; nil until the first append
	size       int64    // bytes of whole lines in the file
	torn       bool     // the file ends in a torn line, cut before the next append
	seq        uint64   // the last sequence number read or written
	// changes holds the last line of each agent, folded or not; those past
	// the state's IntentSeq are the ones that count.
	changes map[string]intentLine
	err     error // why the journal cannot be used
	errc    atomic.Pointer[error]
}

// SetEnabled durably records whether agent id is enabled: it returns once
// the change is on disk. Like Update, it refuses while Err is not nil, and
// then changes nothing.
func (s *Store) SetEnabled(id string, enabled bool) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("intent not saved: %w", err)
	}
	s.jmu.Lock()
	defer s.jmu.Unlock()
	j := &s.j
	if j.err != nil {
		return fmt.Errorf("intent not saved: %w", j.err)
	}
	if err := j.open(s.dir); err != nil {
		return fmt.Errorf("intent not saved: %w", err)
	}
	line := intentLine{Seq: max(j.seq, s.stateSeq.Load()) + 1, ID: id, Enabled: enabled}
	data, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("intent not saved: %w", err)
	}
	data = append(data, '\n')
	n, err := j.f.Write(data)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		// Whatever reached the file was never acknowledged: cut it, or,
		// if that fails too, stop appending behind it.
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				j.fail(fmt.Errorf("%s: cutting a failed append: %w", j.path, terr))
			}
		}
		return fmt.Errorf("intent not saved: %s: %w", j.path, err)
	}
	j.size += int64(n)
	j.seq = line.Seq
	j.changes[id] = line
	return nil
}

// open opens the journal for appending, creating it (0600) when missing,
// and cuts a torn last line.
func (j *journal) open(dir string) error {
	if j.f != nil {
		return nil
	}
	// A link or anything but a regular file is refused before the open
	// (which would refuse a link that appears meanwhile); the file opened
	// is then checked to be the one examined.
	fi, err := os.Lstat(j.path)
	created := errors.Is(err, fs.ErrNotExist)
	switch {
	case err == nil:
		err = checkRegular(j.path, fi)
	case created:
		err = nil
	}
	if err != nil {
		return err
	}
	f, err := j.openAppend(j.path)
	if err != nil {
		return err
	}
	if err := checkOpened(j.path, f); err != nil {
		return err
	}
	if created {
		// The new name must survive a crash as much as its first line.
		if err := syncDir(dir); err != nil {
			f.Close()
			return err
		}
	}
	if j.torn {
		if err := f.Truncate(j.size); err != nil {
			f.Close()
			return fmt.Errorf("%s: cutting a torn last line: %w", j.path, err)
		}
		j.torn = false
	}
	j.f = f
	return nil
}

func (j *journal) fail(err error) {
	j.err = err
	j.errc.Store(&err)
}

// load reads the journal from disk again, forgetting what was in memory.
// A failure is kept in j.err.
func (j *journal) load() error {
	j.close()
	j.changes, j.size, j.torn, j.seq = map[string]intentLine{}, 0, false, 0
	j.err = nil
	j.errc.Store(nil)
	data, err := readFile(j.path)
	if err == nil {
		err = j.parse(data)
	}
	if err != nil {
		j.fail(err)
	}
	return err
}

// parse takes the lines of data; see IntentFile for the rules.
func (j *journal) parse(data []byte) error {
	var off int64
	for lineNo := 1; len(data) > 0; lineNo++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			j.torn = true // an append cut short by a crash
			return nil
		}
		var l intentLine
		dec := json.NewDecoder(bytes.NewReader(data[:i]))
		dec.DisallowUnknownFields()
		err := dec.Decode(&l)
		switch {
		case err != nil:
		case len(bytes.Trim(data[dec.InputOffset():i], " \t\r")) > 0:
			// Not dec.More, which is false before a '}' or a ']'.
			err = errors.New("unexpected data after the JSON object")
		case l.ID == "":
			err = errors.New(`no "id"`)
		case l.Seq <= j.seq:
			err = fmt.Errorf("sequence number %d does not follow %d", l.Seq, j.seq)
		}
		if err != nil {
			return &CorruptError{Path: j.path, Line: lineNo, Offset: off, Err: err}
		}
		j.changes[l.ID] = l
		j.seq = l.Seq
		off += int64(i + 1)
		j.size = off
		data = data[i+1:]
	}
	return nil
}

// apply writes into st the changes past st.IntentSeq.
func (j *journal) apply(st *State) {
	for id, l := range j.changes {
		if l.Seq > st.IntentSeq {
			a := st.Agents[id]
			a.Enabled = l.Enabled
			a.Parked = nil
			st.Agents[id] = a
		}
	}
	st.IntentSeq = max(st.IntentSeq, j.seq)
}

// folded empties the journal once a state file holding everything up to
// seq is on disk, unless lines were appended since. Failing to empty it
// costs nothing but its length: loading skips the folded lines.
func (j *journal) folded(seq uint64) {
	for id, l := range j.changes {
		if l.Seq <= seq {
			delete(j.changes, id)
		}
	}
	if j.seq != seq || j.size == 0 || j.f == nil {
		return
	}
	if j.f.Truncate(0) == nil {
		j.size = 0
	}
}

func (j *journal) close() {
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}

// intentPath is the journal's path in dir.
func intentPath(dir string) string { return filepath.Join(dir, IntentFile) }
