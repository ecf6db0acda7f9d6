// Package state is the service's durable intent: which agents are enabled
// and how each one's last run ended, kept per profile in <stateDir>/state.json
// and, for changes of intent not yet folded into it, the intent journal
// <stateDir>/intent.log (see IntentFile).
//
// Every write is atomic and durable (invariant I4): a new state file is
// written beside the old one, synced and renamed over it, and the directory
// is synced, so a crash at any moment leaves either the old file or the new
// one, never a mixture; a change of intent is a synced append to the
// journal, whose torn last line a crash may leave is dropped. A file that
// cannot be used (malformed, a symbolic link, unreadable) is reported
// through Err and left exactly as it is: writes are refused until the file
// is fixed, never reset.
//
// The package owns those two files and the temporary files beside them; it
// knows agents only by their ids, and nothing of configs or processes; the
// error codes a run's record carries are api's. The service imports it; a process that only looks at a
// profile's state (the end-to-end tests) uses Read, which changes nothing.
package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tether-dev/tether/api"
)

// Version is the version of the file format this package reads and
// writes: a file of any other version is refused (see decode).
const Version = 1

// FileName is the name of the state file inside the state directory.
const FileName = "state.json"

// Run is the last run of an identity.
type Run struct {
	Started time.Time `json:"started"`
	Stopped time.Time `json:"stopped,omitzero"`
	PID     int       `json:"pid,omitempty"`
	Exit    string    `json:"exit,omitempty"`  // e.g. "exit status 1", "killed by signal: killed"
	Error   *RunError `json:"error,omitempty"` // why the run failed to start or to clean up
}

// RunError is a typed failure of a run.
type RunError struct {
	Code    api.Code `json:"code"`
	Message string   `json:"message"`
	// Last is how the agent last ended (api.Error.Last), when known.
	Last *api.Error `json:"last,omitempty"`
}

// Agent is the durable intent for one agent.
type Agent struct {
	Enabled bool `json:"enabled"`
	LastRun *Run `json:"last_run,omitempty"`
	// Parked, when set, says the service parked the agent and does not
	// start it again, not even after its own restart, until someone
	// starts it (any change of intent for the agent clears it, see
	// IntentFile) or its config entry changes (Parked.Config). Version 2.
	Parked *Parked `json:"parked,omitempty"`
}

// Parked records why and when an enabled agent was parked: failed and not
// restarted, as after a crash loop.
type Parked struct {
	Since time.Time `json:"since"`
	// Code and Message are the row's error when it was parked.
	Code    api.Code `json:"code"`
	Message string   `json:"message"`
	// Last is how the agent last ended (api.Error.Last), when known.
	Last *api.Error `json:"last,omitempty"`
	// Config identifies the agent's config entry at that moment (the
	// service's fingerprint of it): an entry that differs since is a
	// fresh start, not the one that was parked.
	Config string `json:"config"`
}

// State is the content of the state file.
type State struct {
	Version int              `json:"version"`
	Agents  map[string]Agent `json:"agents"` // keyed by agent id
	// IntentSeq is the last line of the intent journal folded into this
	// state (see IntentFile).
	IntentSeq uint64 `json:"intent_seq,omitempty"`
}

// clone returns a deep copy of s.
func (s State) clone() State {
	c := State{Version: s.Version, Agents: make(map[string]Agent, len(s.Agents)), IntentSeq: s.IntentSeq}
	for id, a := range s.Agents {
		if a.LastRun != nil {
			r := *a.LastRun
			if r.Error != nil {
				e := *r.Error
				r.Error = &e
			}
			a.LastRun = &r
		}
		if a.Parked != nil {
			p := *a.Parked
			a.Parked = &p
		}
		c.Agents[id] = a
	}
	return c
}

func emptyState() State { return State{Version: Version, Agents: map[string]Agent{}} }

// Store is the state of one profile, in memory and on disk. Its methods
// are safe for concurrent use; updates are applied one at a time.
type Store struct {
	dir  string
	path string

	mu    sync.Mutex
	state State  // what the file held when last read or written cleanly
	disk  []byte // the file's bytes at that moment; nil when there was no file
	err   error  // why the file on disk cannot be used; nil when state is what it holds

	// errCopy mirrors err for Err, which must never wait behind a write.
	errCopy atomic.Pointer[error]

	// jmu guards j, the intent journal. An append takes only jmu, so it
	// never waits behind a write of the state file; where both are
	// taken, mu comes first.
	jmu sync.Mutex
	j   journal
	// stateSeq mirrors state.IntentSeq for appends, which do not take mu:
	// a new line must be numbered past everything already folded.
	stateSeq atomic.Uint64
}

// setStateLocked records st, read from or written as data.
func (s *Store) setStateLocked(st State, data []byte) {
	s.state, s.disk = st, data
	s.stateSeq.Store(st.IntentSeq)
}

// setErrLocked sets err and its copy.
func (s *Store) setErrLocked(err error) {
	s.err = err
	if err == nil {
		s.errCopy.Store(nil)
	} else {
		s.errCopy.Store(&err)
	}
}

// AppendOpener opens the file at path for appending, creating it private
// to the user when it is missing, without following a link in its last
// element. The state is data and never reaches the OS layer: whoever opens
// a Store passes the platform's (platform.OpenAppendNoFollow).
type AppendOpener func(path string) (*os.File, error)

// Open opens the state kept in dir, creating dir (0700) if it is missing.
// It refuses a dir that is a symbolic link, not a directory or (on Unix)
// owned by another user. A missing state file is an empty state; a state
// file that cannot be used does not fail Open: Err reports it. The intent
// journal is opened for appending with openAppend.
func Open(dir string, openAppend AppendOpener) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, path: filepath.Join(dir, FileName), state: emptyState()}
	s.j.path, s.j.openAppend = intentPath(dir), openAppend
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jmu.Lock()
	defer s.jmu.Unlock()
	// The journal first, for the reason Read gives.
	_ = s.j.load()     // kept in s.j.err for Err
	_ = s.loadLocked() // kept in s.err for Err
	removeStaleTemps(dir)
	return s, nil
}

// Close lets go of the intent journal's open file (on Windows, an open
// file cannot be removed or renamed by anyone). A later SetEnabled opens
// it again.
func (s *Store) Close() error {
	s.jmu.Lock()
	defer s.jmu.Unlock()
	s.j.close()
	return nil
}

// Path is the state file's path.
func (s *Store) Path() string { return s.path }

// State returns a deep copy of the state. While Err is not nil it is the
// last state that was read or written cleanly (empty if there was none).
func (s *Store) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state.clone()
	s.jmu.Lock()
	defer s.jmu.Unlock()
	s.j.apply(&st)
	return st
}

// Err reports why the state file cannot be used: a *CorruptError
// (errors.Is ErrCorrupt) when it is malformed, an *UnsafePathError
// (errors.Is ErrUnsafe) when it is a symbolic link or not a regular file,
// or the error that reading it met. The intent journal is judged the same
// way, after the state file. It is nil when both are usable.
func (s *Store) Err() error {
	if p := s.errCopy.Load(); p != nil {
		return *p
	}
	if p := s.j.errc.Load(); p != nil {
		return *p
	}
	return nil
}

// Update applies fn to a copy of the state and persists the result
// atomically. It first rereads the file, so a change made on disk by hand
// is the base fn sees rather than being overwritten. If the file cannot be
// used (see Err), fn is not called, nothing on disk changes and the error
// is returned. On success the new state is what State returns.
//
// The file is written through a temporary file and a rename, which replaces
// a link rather than writing through one; a state.json that is a symbolic
// link is refused with an *UnsafePathError all the same.
func (s *Store) Update(fn func(*State)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return fmt.Errorf("state not saved: %w", err)
	}
	next := s.state.clone()
	s.jmu.Lock()
	jerr := s.j.err
	s.j.apply(&next)
	s.jmu.Unlock()
	if jerr != nil {
		return fmt.Errorf("state not saved: %w", jerr)
	}
	fn(&next)
	next.Version = Version
	if next.Agents == nil {
		next.Agents = map[string]Agent{}
	}
	data, err := encode(next)
	if err != nil {
		return fmt.Errorf("state not saved: %w", err)
	}
	// What is written decodes back to next (the round trip is tested):
	// it is not decoded again here, which would cost more than the write.
	renamed, err := writeFile(s.dir, s.path, data)
	if renamed {
		// The new file is in place even if syncing the directory failed:
		// memory follows what the disk holds.
		s.setStateLocked(next, data)
		s.setErrLocked(nil)
		s.jmu.Lock()
		s.j.folded(next.IntentSeq)
		s.jmu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("saving %s: %w", s.path, err)
	}
	return nil
}

// Reload rereads the state file and the intent journal, for instance
// after the user fixed one. On success Err is nil again.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.loadLocked()
	s.jmu.Lock()
	defer s.jmu.Unlock()
	if jerr := s.j.load(); err == nil {
		err = jerr
	}
	return err
}

// loadLocked rereads the file and, when its bytes differ from those last
// seen or it was unusable, parses it again. A failure is kept in s.err and
// leaves s.state as it was.
func (s *Store) loadLocked() error {
	data, err := readFile(s.path)
	if err == nil && s.err == nil && (data == nil) == (s.disk == nil) && bytes.Equal(data, s.disk) {
		return nil
	}
	st := emptyState()
	if err == nil && data != nil {
		st, err = decode(s.path, data)
	}
	if err != nil {
		s.setErrLocked(err)
		return err
	}
	s.setStateLocked(st, data)
	s.setErrLocked(nil)
	return nil
}

// Read returns the state kept in dir, intent journal included, without
// creating, cleaning or writing anything: for a process that only looks,
// such as a test beside a running service. A missing directory or file is
// the empty state.
func Read(dir string) (State, error) {
	// The journal first: the service folds the journal into a new
	// state file, renames that into place and only then empties the
	// journal. Read the other way round, a reader beside it could take
	// the old state file and the emptied journal and lose what was
	// folded; read journal first, it has either the lines or a state
	// file that holds them (lines it holds are skipped by their
	// sequence numbers).
	j := journal{path: intentPath(dir)}
	if err := j.load(); err != nil {
		return State{}, err
	}
	st := emptyState()
	data, err := readFile(filepath.Join(dir, FileName))
	if err == nil && data != nil {
		st, err = decode(filepath.Join(dir, FileName), data)
	}
	if err != nil {
		return State{}, err
	}
	j.apply(&st)
	return st, nil
}
