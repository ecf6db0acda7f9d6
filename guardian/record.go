package guardian

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/wire"
)

// recordVersion is the version of the owner record this guardian writes.
const recordVersion = 1

// procRef names a process in the owner record, across PID reuse.
type procRef = platform.Ref

// record is what the holder of an identity writes in the lock directory,
// in <key>.owner: who holds it and what tree it started. It is read and
// rewritten in place only under an exclusive lock on the record file
// itself (flock on Unix, LockFileEx on Windows), which is also held across
// taking the ownership lock, so a reader never sees a holder without its
// record or a record without its holder.
type record struct {
	Version    int       `json:"version"`
	Identity   string    `json:"identity"`
	Profile    string    `json:"profile,omitempty"`
	Guardian   procRef   `json:"guardian"`
	Agent      procRef   `json:"agent"`
	Cgroup     string    `json:"cgroup,omitempty"` // Linux
	Job        string    `json:"job,omitempty"`    // Windows: the job object's name
	PrivateDir string    `json:"private_dir,omitempty"`
	Since      time.Time `json:"since"`
	// StopTimeout and KillGrace are the tree's, for whoever stops it
	// when its guardian died (see reclaimSiblings).
	StopTimeout wire.Duration `json:"stop_timeout,omitempty"`
	KillGrace   wire.Duration `json:"kill_grace,omitempty"`
	// Cleanup is set while the holder's teardown cannot confirm its
	// tree dead and is being retried: whoever reads the record, such as
	// a service relaunched after the one that owned this guardian died,
	// learns why the identity is still held.
	Cleanup *wire.Cleanup `json:"cleanup,omitempty"`
	// Clock names the count of its owner's guardians the holder is in
	// (Linux, see siblings), so that whoever finds it dead, holding
	// still, ends its part there (see endDead).
	Clock uint64 `json:"clock,omitempty"`
}

func (r *record) holder() *wire.Holder {
	if r == nil {
		return &wire.Holder{Unknown: true}
	}
	return &wire.Holder{
		Identity:    r.Identity,
		Profile:     r.Profile,
		GuardianPID: r.Guardian.Pid,
		AgentPID:    r.Agent.Pid,
		Since:       r.Since,
		Cleanup:     r.Cleanup,
	}
}

// recordFile is the open <key>.owner file.
type recordFile struct {
	f *os.File
}

// errRecordBusy: another guardian held the record lock for longer than
// the wait allowed (it may be taking over an abandoned tree, or be
// stopped by a signal).
var errRecordBusy = errors.New("another guardian is acquiring this identity")

// recordPath is where the record of the identity of key is.
func recordPath(lockDir, key string) string { return filepath.Join(lockDir, key+".owner") }

func openRecord(lockDir, key string) (*recordFile, error) {
	f, err := platform.OpenLockFile(recordPath(lockDir, key))
	if err != nil {
		return nil, err
	}
	return &recordFile{f: f}, nil
}

// lock takes the record's lock, retrying until wait has passed.
func (r *recordFile) lock(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := platform.TryLock(r.f)
		if !errors.Is(err, platform.ErrLocked) {
			return err
		}
		if time.Now().After(deadline) {
			return errRecordBusy
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *recordFile) unlock() { _ = platform.Unlock(r.f) }

func (r *recordFile) close() { r.f.Close() }

// read returns the record, nil when there is none, or an error when the
// file holds something that is not a record.
func (r *recordFile) read() (*record, error) {
	b, err := io.ReadAll(io.NewSectionReader(r.f, 0, 1<<20))
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, nil
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// write replaces the record's content. It is not synced: the record only
// matters while processes live, and a crash of the machine ends them all
// (after a reboot, start times no longer match any process).
func (r *recordFile) write(rec *record) error {
	var b []byte
	if rec != nil {
		var err error
		if b, err = json.Marshal(rec); err != nil {
			return err
		}
	}
	if err := r.f.Truncate(0); err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := r.f.WriteAt(b, 0); err != nil {
			return err
		}
	}
	return nil
}

// Holding is what the owner record of an identity says while a live
// guardian holds it.
type Holding struct {
	wire.Holder
	// PrivateDir is the holder's private directory, made or about to be.
	PrivateDir string
}

// ErrRecordBusy: the owner record was locked by a guardian for longer
// than Inspect waits (it may be taking over an abandoned tree).
var ErrRecordBusy = errRecordBusy

// inspectWait bounds Inspect's wait for the record lock.
const inspectWait = 200 * time.Millisecond

// Inspect reads the owner record of identity in lockDir, as a contender
// would, without taking the identity, and returns what it says when the
// guardian it names is alive; nil when no live guardian is recorded. The
// record is read under its own lock, which a guardian holds only while
// it takes or lets go of the identity; ErrRecordBusy when that lasts
// longer than a moment.
func Inspect(lockDir, identity string) (*Holding, error) {
	return InspectKey(lockDir, Key(identity))
}

// InspectKey is Inspect for the identity whose key (see Key) is key.
func InspectKey(lockDir, key string) (*Holding, error) {
	path := recordPath(lockDir, key)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil // never held: nothing to make
	}
	f, err := platform.OpenLockFile(path)
	if err != nil {
		return nil, err
	}
	rf := &recordFile{f: f}
	defer rf.close()
	if err := rf.lock(inspectWait); err != nil {
		return nil, err
	}
	rec, err := rf.read()
	rf.unlock()
	if err != nil || rec == nil || rec.Guardian.Pid <= 0 || !platform.Alive(rec.Guardian) {
		return nil, err
	}
	return &Holding{Holder: *rec.holder(), PrivateDir: rec.PrivateDir}, nil
}
