package upgrade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/service/config"
)

// The handover record is what a service hands its successor at an
// upgrade (I9): which descriptor is which tether, and what it knew. It is
// named to the successor by Env: on Linux a memfd the successor
// inherits across the execve and closes as soon as it has read it;
// elsewhere a file in the state directory, written 0600 to a temporary
// file renamed into place, and removed by the successor as soon as it has
// read it. It is not synced: it matters only while the process that wrote
// it lives (after a crash of the machine there is nothing to hand over),
// and a sync would make the API wait for the disk.
//
// It is four lines of compact JSON (which has no newline of its own):
// the record without its agents and without the config's source, the
// agents' rows (api.Agent, what a status shows), the rest of the agents
// (see encodeAgents), and the config's source, a JSON string. The
// successor reads the first line and the rows before anything else, and
// answers a status from them; it decodes the rest of the agents beside
// the config, once that first answer is out.
//
// The old service asks the new binary whether it reads Version
// before it hands over (handover-check): a successor never meets a record
// it cannot read, and one of another version is refused, named.
const Version = 1

// Env names the record in a successor's environment; "tether service
// run" started with it takes over instead of starting afresh.
const Env = "TETHER_HANDOVER"

// fileName is the record's file name in the state directory.
const fileName = "handover.json"

// Record is the record.
type Record struct {
	Version int       `json:"version"`
	Written time.Time `json:"written"`
	// PID is the writer's. On Unix the successor is the same process
	// (execve) and checks that it is; on Windows it is the process that
	// the successor tells it has taken over.
	PID     int         `json:"pid"`
	Profile string      `json:"profile"`
	Upgrade api.Upgrade `json:"upgrade"`
	// Config is the config the service ran, as it was parsed: the
	// successor runs the same one, whatever the file holds now (a reload
	// applies the file).
	Config Config `json:"config"`
	// Lock and Listener are the descriptors of the service lock (held:
	// the successor never lets another service of the profile in) and of
	// the API's listening socket (still listening: clients queue), or on
	// Windows the pipe's listening instances.
	Lock     uintptr   `json:"lock"`
	Listener []uintptr `json:"listener"`
	// Tethers are the descriptors of the agents' tethers (Agent.Tether),
	// in the first line: on Unix the successor makes them close-on-exec
	// again before it decodes the agents.
	Tethers []uintptr `json:"tethers,omitempty"`
	// Lease is the etcd lease that holds the profile's identities (a
	// config with a lease section): the successor renews it by this ID,
	// so that no identity is released and each keeps its fencing token.
	// Zero: none.
	Lease int64 `json:"lease,omitempty"`
	// Agents are in the config's order.
	Agents []Agent `json:"agents"`
	// Steps is the timeline of the handover so far, for the log.
	Steps []StepAt `json:"steps,omitempty"`
	// Reap lists children of the writer that exit on their own (warm
	// guardians let go, a stand-in): its successor on Unix, the same
	// process, reaps them.
	Reap []int `json:"reap,omitempty"`
	// StandIn (Unix) is the descriptor of the control socket of the
	// stand-in answering meanwhile (see StandIn), which the successor
	// recalls before it serves; zero for none.
	StandIn uintptr `json:"stand_in,omitempty"`
	// Discard (Unix) lists descriptors the writer held for
	// itself whose close waits on the kernel (its directory watches):
	// handed over so that the execve does not close them and make the
	// successor wait before it serves, they are closed once it has
	// answered and taken the guardians over.
	Discard []uintptr `json:"discard,omitempty"`
	// source is the line that holds Config.Source, as read and not yet
	// decoded: ParseConfig decodes it.
	source json.RawMessage
	// standIn is the stand-in, in the writer: TakeOver fills StandIn.
	standIn *StandIn
}

// Config is the config a service runs: its path and its exact source.
type Config struct {
	Path   string `json:"path"`
	Source []byte `json:"source"`
}

// Path is where the record of stateDir's profile is written, where it
// is not in memory.
func Path(stateDir string) string { return filepath.Join(stateDir, fileName) }

// write writes rec to the state directory and returns its path.
func write(stateDir string, rec *Record) (string, error) {
	b, err := encode(rec)
	if err != nil {
		return "", err
	}
	path := Path(stateDir)
	return path, writeRecordFile(path, b)
}

// writeRecordFile writes the encoded record b to path, through a
// temporary file beside it.
func writeRecordFile(path string, b []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err == nil {
		_, err = f.Write(b)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the handover record: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing the handover record: %w", err)
	}
	return nil
}

// encode encodes rec in its four lines.
func encode(rec *Record) ([]byte, error) {
	source, err := json.Marshal(rec.Config.Source)
	if err != nil {
		return nil, err
	}
	rows := make([]api.Agent, len(rec.Agents))
	for i, a := range rec.Agents {
		rows[i] = a.Row
	}
	head := *rec
	head.Config.Source = nil
	// The outer Agents, nil and omitted, hides the record's own.
	b, err := json.Marshal(struct {
		*Record
		Agents *struct{} `json:"agents,omitempty"`
	}{Record: &head})
	if err != nil {
		return nil, err
	}
	rowsLine, err := encodeSplit(rows)
	if err != nil {
		return nil, err
	}
	agents, err := encodeSplit(rec.Agents)
	if err != nil {
		return nil, err
	}
	nl := []byte("\n")
	return slices.Concat(b, nl, rowsLine, nl, agents, nl, source, nl), nil
}

// agentsSep separates the elements of the rows' and the agents' lines:
// JSON reads the tab as whitespace, and encoding/json escapes every
// control character inside a string, so in what encodeSplit writes a tab
// is only ever there. decodeSplit splits a line at each and decodes the
// elements side by side.
const agentsSep = ",\t"

// encodeSplit encodes elems as one JSON array, its elements encoded
// side by side, one run per processor, and written with agentsSep
// between them.
func encodeSplit[T any](elems []T) ([]byte, error) {
	if len(elems) == 0 {
		return json.Marshal(elems)
	}
	enc := make([][]byte, len(elems))
	err := eachSpan(len(elems), func(i int) (err error) {
		enc[i], err = json.Marshal(&elems[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	n := 2
	for _, e := range enc {
		n += len(e) + len(agentsSep)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, e := range enc {
		if i > 0 {
			b = append(b, agentsSep...)
		}
		b = append(b, e...)
	}
	return append(b, ']'), nil
}

// eachSpan calls f for 0 to n-1, in runtime.GOMAXPROCS(0) contiguous
// spans side by side, and returns the first error of each span's, joined.
func eachSpan(n int, f func(i int) error) error {
	spans := min(runtime.GOMAXPROCS(0), n)
	errs := make([]error, spans)
	var wg sync.WaitGroup
	for k := range spans {
		wg.Go(func() {
			for i := k * n / spans; i < (k+1)*n/spans; i++ {
				if err := f(i); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ErrRecord: the record named by Env could not be used.
var ErrRecord = errors.New("unusable handover record")

// Read reads and removes the record at path, and checks that it is one
// this binary reads, written for profile. The agents are left undecoded,
// for DecodeRows and DecodeAgents: their decode is most of the record's,
// and the successor answers from the rows before it decodes the rest.
func Read(path, profile string) (*Record, *RecordAgents, error) {
	b, err := readRecord(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	var rec Record
	// The outer Agents hides the record's own from the decoder.
	head := struct {
		*Record
		Agents json.RawMessage `json:"agents"`
	}{Record: &rec}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if err := json.Unmarshal(first, &head); err != nil {
		return nil, nil, fmt.Errorf("%w %s: %v", ErrRecord, path, err)
	}
	lines := bytes.Split(bytes.TrimSuffix(rest, []byte("\n")), []byte("\n"))
	switch {
	case rec.Version != Version:
		return nil, nil, fmt.Errorf("%w %s: version %d; this tether reads version %d", ErrRecord, path, rec.Version, Version)
	case rec.Profile != profile:
		return nil, nil, fmt.Errorf("%w %s: written for profile %q, not %q", ErrRecord, path, rec.Profile, profile)
	case head.Agents != nil || rec.Config.Source != nil || len(lines) != 3:
		return nil, nil, fmt.Errorf("%w %s: not the record, its rows, its agents and the config's source, each on a line", ErrRecord, path)
	}
	// Left to DecodeRows and DecodeAgents, and the source to ParseConfig.
	rec.source = lines[2]
	return &rec, &RecordAgents{path: path, rowsRaw: lines[0], raw: lines[1]}, nil
}

// RecordAgents are a record's agents as read, not yet decoded.
type RecordAgents struct {
	path string
	rows []api.Agent // once DecodeRows has decoded them
	// rowsRaw and raw are the lines of the rows and of the rest.
	rowsRaw, raw json.RawMessage
}

// DecodeRows decodes the agents' rows, in the record's order: what a
// status shows.
func (ra *RecordAgents) DecodeRows() ([]api.Agent, error) {
	if ra.rows == nil {
		rows, err := decodeSplit[api.Agent](ra.rowsRaw)
		if err != nil {
			return nil, fmt.Errorf("%w %s: its rows: %v", ErrRecord, ra.path, err)
		}
		ra.rows, ra.rowsRaw = rows, nil
	}
	return ra.rows, nil
}

// DecodeAgents decodes the agents of rec, read as ra, each with its row.
func (rec *Record) DecodeAgents(ra *RecordAgents) error {
	rows, err := ra.DecodeRows()
	if err != nil {
		return err
	}
	agents, err := decodeSplit[Agent](ra.raw)
	if err != nil {
		return fmt.Errorf("%w %s: its agents: %v", ErrRecord, ra.path, err)
	}
	if len(agents) != len(rows) {
		return fmt.Errorf("%w %s: %d agents and %d rows", ErrRecord, ra.path, len(agents), len(rows))
	}
	for i := range agents {
		if rows[i].ID != agents[i].ID {
			return fmt.Errorf("%w %s: the row of %q where %q's is due", ErrRecord, ra.path, rows[i].ID, agents[i].ID)
		}
		agents[i].Row = rows[i]
	}
	rec.Agents = agents
	return nil
}

// decodeSplit decodes a line that encodeSplit wrote, its elements side
// by side; a line it did not split (a plain JSON array) or that does not
// decode so is decoded whole, which says what is wrong with it.
func decodeSplit[T any](raw []byte) ([]T, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if elems, ok := splitAgents(raw); ok {
		out := make([]T, len(elems))
		if eachSpan(len(elems), func(i int) error { return json.Unmarshal(elems[i], &out[i]) }) == nil {
			return out, nil
		}
	}
	var out []T
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// splitAgents splits a line that encodeSplit wrote into its elements; ok
// is false for a line without agentsSep.
func splitAgents(raw []byte) (agents [][]byte, ok bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' || !bytes.Contains(raw, []byte(agentsSep)) {
		return nil, false
	}
	return bytes.Split(raw[1:len(raw)-1], []byte(agentsSep)), true
}

// ParseConfig parses the config the record carries, as the service
// before had parsed it.
func (rec *Record) ParseConfig() (*config.Config, error) {
	if rec.source != nil {
		if err := json.Unmarshal(rec.source, &rec.Config.Source); err != nil {
			return nil, fmt.Errorf("%w: the config's source: %v", ErrRecord, err)
		}
		rec.source = nil
	}
	name := rec.Config.Path
	cfg, err := config.Parse(name, rec.Config.Source)
	if err != nil {
		return nil, fmt.Errorf("the config handed over: %w", err)
	}
	cfg.Path = name // the embedded default keeps its name
	return cfg, nil
}

// RemoveStale removes the records, and their temporary files, that a
// handover killed before it was taken over left in stateDir.
func RemoveStale(stateDir string) {
	left, _ := filepath.Glob(filepath.Join(stateDir, fileName+"*"))
	for _, f := range left {
		_ = os.Remove(f)
	}
}
