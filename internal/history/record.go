package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Kind is what a record says.
type Kind string

// The kinds of record.
const (
	// Start is written by an agent as the first thing it does.
	Start Kind = "start"
	// End is written by an agent as the last thing it does: it exits
	// right after, on SIGTERM as on a plain exit.
	End Kind = "end"
	// Gone is written by a watcher that saw the process gone (through
	// its pidfd) without an End: a SIGKILL, a crash. Its time is when
	// the watcher saw it, at or after the real end: an upper bound.
	Gone Kind = "gone"
)

// Record is one line of a history file, in JSON.
type Record struct {
	Kind Kind `json:"kind"`
	// At is the time on the machine's monotonic clock, in nanoseconds.
	At int64 `json:"at"`
	// Host names the simulated machine the process ran on.
	Host string `json:"host"`
	// Identity is the agent's identity (Start only).
	Identity string `json:"identity,omitempty"`
	// PID and Boot name the process: Boot is its start time as the
	// kernel counts it (/proc/PID/stat's starttime), which tells apart two
	// processes that had the same pid one after the other.
	PID  int    `json:"pid"`
	Boot uint64 `json:"boot"`
	// Fence is the fencing token the agent was given (Start only; 0:
	// none).
	Fence int64 `json:"fence,omitempty"`
}

// Proc names the process of a record.
type Proc struct {
	PID  int
	Boot uint64
}

// Proc is the process r is about.
func (r Record) Proc() Proc { return Proc{r.PID, r.Boot} }

// Encode is r as one line of a history file, newline included.
func (r Record) Encode() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		// A Record holds only strings and numbers.
		panic(err)
	}
	return append(b, '\n')
}

// Append appends r to the history file at path, in one write to a file
// opened for appending, so that the records of processes writing the
// same file do not mix.
func Append(path string, r Record) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(r.Encode()); err != nil {
		f.Close()
		return fmt.Errorf("appending to %s: %w", path, err)
	}
	return f.Close()
}

// ErrBadRecord is the cause of a line that is not a record.
var ErrBadRecord = errors.New("not a history record")

// ReadFile reads every record of the history file at path. A line that
// is not a record is an error naming the file and the line.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(path, f)
}

// Read reads every record of r, whose lines name calls name in errors.
func Read(name string, r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec Record
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", name, n, ErrBadRecord, err)
		}
		switch rec.Kind {
		case Start, End, Gone:
		default:
			return nil, fmt.Errorf("%s:%d: %w: kind %q", name, n, ErrBadRecord, rec.Kind)
		}
		if rec.PID <= 0 || rec.At <= 0 || rec.Host == "" || rec.Kind == Start && rec.Identity == "" {
			return nil, fmt.Errorf("%s:%d: %w: a pid, a time and a host are needed, and an identity at a start: %s", name, n, ErrBadRecord, line)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
