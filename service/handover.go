package service

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
// JSON in a file named to the successor by handoverEnv: on Linux, from
// version 4 on, a memfd the successor inherits across the execve and
// closes as soon as it has read it; elsewhere, and to an older
// successor, a file in the state directory, written 0600 to a temporary
// file renamed into place, and removed by the successor as soon as it has
// read it. It is not synced: it
// matters only while the process that wrote it lives (after a crash of
// the machine there is nothing to hand over), and a sync would make the
// API wait for the disk.
//
// A successor reads every version from MinHandoverVersion to
// HandoverVersion. The old service asks the new binary which it reads
// before it hands over (handover-check) and writes the newest of those
// it can, so a successor never meets a record it cannot read, and a
// binary of an older version can still take over. Version 2 added
// Discard. Version 3 writes the record in lines (agentsApart): the record
// without its agents, the agents, and the config in the parsed form of
// the new binary (Parsed), so that the successor reads the rest without
// scanning the agents, decodes the agents beside the config, and need not
// parse the config again. Version 4 may be in memory (recordInMemory).
// Version 5 writes the config's source on a line of its own
// (sourceApart), after the agents: the record's first line, which the
// successor reads before anything else, is then a few hundred bytes, and
// the source is decoded beside the agents, with the config.
const (
	HandoverVersion    = 5
	MinHandoverVersion = 1
)

// agentsApart is the first record version written in lines: the record
// but its agents, the agents, and the parsed config if there is one,
// each a line of compact JSON (which has no newline of its own).
const agentsApart = 3

// sourceApart is the first record version with the config's source on
// its own line, between the agents and the parsed config: a JSON string,
// as encoding/json writes bytes.
const sourceApart = 5

// handoverEnv names the record in a successor's environment; "tether
// service run" started with it takes over instead of starting afresh.
const handoverEnv = "TETHER_HANDOVER"

// handoverName is the record's file name in the state directory.
const handoverName = "handover.json"

// handoverRecord is the record.
type handoverRecord struct {
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
	Config handoverConfig `json:"config"`
	// Lock and Listener are the descriptors of the service lock (held:
	// the successor never lets another service of the profile in) and of
	// the API's listening socket (still listening: clients queue), or on
	// Windows the pipe's listening instances.
	Lock     uintptr   `json:"lock"`
	Listener []uintptr `json:"listener"`
	// Agents are in the config's order.
	Agents []agentHandover `json:"agents"`
	// Steps is the timeline of the handover so far, for the log.
	Steps []handoverStep `json:"steps,omitempty"`
	// Reap lists children of the writer that exit on their own (warm
	// guardians let go): its successor on Unix, the same process, reaps
	// them.
	Reap []int `json:"reap,omitempty"`
	// Discard (version 2, Unix) lists descriptors the writer held for
	// itself whose close waits on the kernel (its directory watches):
	// handed over so that the execve does not close them and make the
	// successor wait before it serves, they are closed once it has
	// answered and taken the guardians over.
	Discard []uintptr `json:"discard,omitempty"`
	// Parsed (version 3) is Config in the parsed form of the build
	// ParsedBy (see config.ParsedForm): a successor of that build reads
	// it instead of parsing Config, any other parses Config. It is the
	// record's third line.
	Parsed   json.RawMessage `json:"-"`
	ParsedBy string          `json:"parsed_by,omitempty"`
	// source (version 5) is the line that holds Config.Source, as read
	// and not yet decoded: config decodes it.
	source json.RawMessage
}

type handoverConfig struct {
	Path   string `json:"path"`
	Source []byte `json:"source"`
}

// handoverPath is where the record of stateDir's profile is written.
func handoverPath(stateDir string) string { return filepath.Join(stateDir, handoverName) }

// writeHandover writes rec to the state directory and returns its path.
func writeHandover(stateDir string, rec *handoverRecord) (string, error) {
	b, err := encodeHandover(rec, nil)
	if err != nil {
		return "", err
	}
	path := handoverPath(stateDir)
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

// encodeHandover encodes rec as its version is written: from agentsApart
// on, in lines, with agents as its agents' line when it is not nil.
func encodeHandover(rec *handoverRecord, agents []byte) ([]byte, error) {
	if rec.Version < agentsApart {
		return json.Marshal(rec)
	}
	head := rec
	var source []byte
	if rec.Version >= sourceApart {
		c := *rec
		c.Config.Source = nil
		head = &c
		var err error
		if source, err = json.Marshal(rec.Config.Source); err != nil {
			return nil, err
		}
	}
	// The outer Agents, nil and omitted, hides the record's own.
	b, err := json.Marshal(struct {
		*handoverRecord
		Agents *struct{} `json:"agents,omitempty"`
	}{handoverRecord: head})
	if err != nil {
		return nil, err
	}
	if agents == nil {
		if agents, err = encodeAgents(rec.Agents); err != nil {
			return nil, err
		}
	}
	b = slices.Concat(b, []byte("\n"), agents, []byte("\n"))
	if source != nil {
		b = append(append(b, source...), '\n')
	}
	switch {
	case len(rec.Parsed) == 0:
	case bytes.IndexByte(rec.Parsed, '\n') < 0:
		// A line already, as the check writes it; a successor that
		// cannot decode it parses the source.
		b = append(append(b, rec.Parsed...), '\n')
	default:
		var parsed bytes.Buffer
		if err := json.Compact(&parsed, rec.Parsed); err != nil {
			return nil, fmt.Errorf("the parsed config: %w", err)
		}
		b = append(append(b, parsed.Bytes()...), '\n')
	}
	return b, nil
}

// agentsSep separates the elements of the agents' line: JSON reads the
// tab as whitespace, and encoding/json escapes every control character
// inside a string, so in what encodeAgents writes a tab is only ever
// there. decodeAgents splits the line at each and decodes the agents
// side by side; a reader that does not know of it reads one array.
const agentsSep = ",\t"

// encodeAgents encodes agents as one JSON array, its elements encoded
// side by side, one run per processor, and written with agentsSep
// between them.
func encodeAgents(agents []agentHandover) ([]byte, error) {
	if len(agents) == 0 {
		return json.Marshal(agents)
	}
	enc := make([][]byte, len(agents))
	err := eachSpan(len(agents), func(i int) (err error) {
		enc[i], err = json.Marshal(&agents[i])
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

// ErrHandoverRecord: the record named by handoverEnv could not be used.
var ErrHandoverRecord = errors.New("unusable handover record")

// readHandover reads and removes the record at path, and checks that it
// is one this binary reads, written for profile. The agents are left
// undecoded, for decodeAgents: their decode is most of the record's, and
// the successor parses the config meanwhile.
func readHandover(path, profile string) (*handoverRecord, *recordAgents, error) {
	b, err := readRecord(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrHandoverRecord, err)
	}
	var rec handoverRecord
	// The outer Agents hides the record's own from the decoder.
	head := struct {
		*handoverRecord
		Agents json.RawMessage `json:"agents"`
	}{handoverRecord: &rec}
	// The first JSON value: the whole record before agentsApart, its
	// first line from then on.
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&head); err != nil {
		return nil, nil, fmt.Errorf("%w %s: %v", ErrHandoverRecord, path, err)
	}
	rest := bytes.TrimSpace(b[dec.InputOffset():])
	var lines [][]byte
	if len(rest) > 0 {
		lines = bytes.Split(rest, []byte("\n"))
	}
	switch {
	case rec.Version < MinHandoverVersion || rec.Version > HandoverVersion:
		return nil, nil, fmt.Errorf("%w %s: version %d; this tether reads %d to %d", ErrHandoverRecord, path, rec.Version, MinHandoverVersion, HandoverVersion)
	case rec.Profile != profile:
		return nil, nil, fmt.Errorf("%w %s: written for profile %q, not %q", ErrHandoverRecord, path, rec.Profile, profile)
	case rec.Version < agentsApart && len(rest) > 0:
		return nil, nil, fmt.Errorf("%w %s: version %d with %d bytes after the record", ErrHandoverRecord, path, rec.Version, len(rest))
	case rec.Version >= agentsApart && head.Agents != nil:
		return nil, nil, fmt.Errorf("%w %s: version %d with its agents inside the record", ErrHandoverRecord, path, rec.Version)
	case rec.Version >= agentsApart && len(lines) == 0:
		return nil, nil, fmt.Errorf("%w %s: version %d without its agents after the record", ErrHandoverRecord, path, rec.Version)
	case rec.Version >= sourceApart && len(lines) < 2:
		return nil, nil, fmt.Errorf("%w %s: version %d without the config's source after its agents", ErrHandoverRecord, path, rec.Version)
	case rec.Version >= sourceApart && rec.Config.Source != nil:
		return nil, nil, fmt.Errorf("%w %s: version %d with the config's source inside the record", ErrHandoverRecord, path, rec.Version)
	case rec.Version >= sourceApart && len(lines) > 3:
		return nil, nil, fmt.Errorf("%w %s: %d lines after the record, want the agents, the config's source and the parsed config", ErrHandoverRecord, path, len(lines))
	case rec.Version < sourceApart && len(lines) > 2:
		return nil, nil, fmt.Errorf("%w %s: %d lines after the record, want the agents and the parsed config", ErrHandoverRecord, path, len(lines))
	}
	raw := head.Agents
	if rec.Version >= agentsApart {
		// Left to decodeAgents, and the source and the parsed config to
		// config, which find out whether they are JSON.
		raw, lines = lines[0], lines[1:]
		if rec.Version >= sourceApart {
			rec.source, lines = lines[0], lines[1:]
		}
		if len(lines) == 1 {
			rec.Parsed = lines[0]
		}
	}
	return &rec, &recordAgents{path: path, raw: raw}, nil
}

// recordAgents are a record's agents as read, not yet decoded.
type recordAgents struct {
	path string
	raw  json.RawMessage
}

// decodeAgents decodes the agents of rec, read as ra.
func (rec *handoverRecord) decodeAgents(ra *recordAgents) error {
	if len(ra.raw) == 0 {
		return nil
	}
	if agents, ok := splitAgents(ra.raw); ok {
		rec.Agents = make([]agentHandover, len(agents))
		if eachSpan(len(agents), func(i int) error { return json.Unmarshal(agents[i], &rec.Agents[i]) }) == nil {
			return nil
		}
		// The whole line's decode says what is wrong with it.
		rec.Agents = nil
	}
	if err := json.Unmarshal(ra.raw, &rec.Agents); err != nil {
		return fmt.Errorf("%w %s: its agents: %v", ErrHandoverRecord, ra.path, err)
	}
	return nil
}

// splitAgents splits an agents' line that encodeAgents wrote into its
// elements; ok is false for a line without agentsSep.
func splitAgents(raw []byte) (agents [][]byte, ok bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' || !bytes.Contains(raw, []byte(agentsSep)) {
		return nil, false
	}
	return bytes.Split(raw[1:len(raw)-1], []byte(agentsSep)), true
}

// config parses the config the record carries, as the service before
// had parsed it.
func (rec *handoverRecord) config() (*config.Config, error) {
	if rec.source != nil {
		if err := json.Unmarshal(rec.source, &rec.Config.Source); err != nil {
			return nil, fmt.Errorf("%w: the config's source: %v", ErrHandoverRecord, err)
		}
		rec.source = nil
	}
	name := rec.Config.Path
	if len(rec.Parsed) > 0 && rec.ParsedBy != "" && rec.ParsedBy == selfBuild() {
		if cfg, err := config.FromParsedForm(name, rec.Config.Source, rec.Parsed); err == nil {
			return cfg, nil
		}
		// The source says the same, more slowly.
	}
	cfg, err := config.Parse(name, rec.Config.Source)
	if err != nil {
		return nil, fmt.Errorf("the config handed over: %w", err)
	}
	cfg.Path = name // the embedded default keeps its name
	return cfg, nil
}

// removeStaleHandover removes the records, and their temporary files,
// that a handover killed before it was taken over left in stateDir.
func removeStaleHandover(stateDir string) {
	left, _ := filepath.Glob(filepath.Join(stateDir, handoverName+"*"))
	for _, f := range left {
		_ = os.Remove(f)
	}
}
