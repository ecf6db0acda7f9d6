package config

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tether-dev/tether/logfile"
	"github.com/tether-dev/tether/probe"

	"github.com/tether-dev/tether/api"
)

// Defaults and limits.
const (
	DefaultRestart     = api.RestartOnFailure
	DefaultStopTimeout = 5 * time.Second
	MaxStopTimeout     = time.Hour
	// MaxIDLen bounds an id, in bytes.
	MaxIDLen = 128
	// maxConfigSize and maxEnvFileSize bound the files read.
	maxConfigSize  = 4 << 20
	maxEnvFileSize = 1 << 20
)

// Agent is one validated entry of the config.
type Agent struct {
	// ID names the agent on the command line and in the API.
	ID string
	// Identity is the lock key; it defaults to ID.
	Identity string
	// Command is the argv; it runs without a shell. A bare "tether" as
	// Command[0] means this tether binary.
	Command []string
	// Dir is the working directory, absolute after "~" expansion; empty
	// means the agent's private directory.
	Dir string
	// Env is added to the agent's environment; nil when unset.
	Env map[string]string
	// EnvFile is the absolute path of a KEY=VALUE file read by Environ;
	// empty when unset.
	EnvFile string
	// Secrets maps variable names to where their values are read at
	// each start (the keychain, a command); nil when unset. The service
	// sets them over Environ's. Left out of the Fingerprint when unset,
	// so that entries without it keep the fingerprint they had before
	// the key existed (an adopted tree's, a parked agent's).
	Secrets map[string]SecretRef `json:",omitempty"`
	// Autostart starts the agent when the service starts.
	Autostart bool
	// Restart is the restart policy; DefaultRestart when unset.
	Restart api.RestartPolicy
	// Retry is the restart policy's numbers; DefaultRetry() where unset.
	Retry Retry
	// Needs is what the agent needs to be reachable to run; nil: nothing.
	Needs *Needs
	// StopTimeout is the time between the polite stop and the kill;
	// DefaultStopTimeout when unset.
	StopTimeout time.Duration
	// Ready is how the agent says, or is seen to be, ready (I8); nil:
	// ready once spawned.
	Ready *probe.Spec
	// StartTimeout bounds the wait for ready; zero (unset) means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Watchdog, with Ready notify, is the longest allowed time between
	// two WATCHDOG=1 pings; zero: no watchdog.
	Watchdog time.Duration
	// Health, when set, is checked while the agent runs.
	Health *Health
	// After lists agents this one starts after (once they are ready,
	// when they are starting too) and stops before.
	After []string
	// Requires lists agents this one needs: starting it starts them,
	// and it does not run without them.
	Requires []string
	// SurviveCrash is how long the agent's tree outlives a crash of the
	// service, waiting for a relaunched service of the profile to adopt
	// it; zero (unset): it goes down with the service (I2).
	SurviveCrash time.Duration
	// LeaseLocal ("lease: local") keeps the identity on this machine
	// only, when the config has a lease section.
	LeaseLocal bool
	// Logs is how the agent's log is written and rotated, its entry's
	// logs over the config's; nil when neither says anything (the
	// guardian's default, logfile.Default).
	Logs *logfile.Policy `json:",omitempty"`
	// Line is the line of the agent's entry in the file, for messages.
	Line int
}

// Fingerprint identifies the entry by everything it says, wherever it
// stands in the file (Line is left out): two entries have the same
// fingerprint when, and only when, they are the same. It is a hex SHA-256
// of the entry's JSON encoding, stable for a version of tether.
func (a Agent) Fingerprint() string {
	a.Line = 0
	// It cannot fail: every field is a string, number, bool, duration,
	// or a slice, map or pointer of those.
	b, _ := json.Marshal(a)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Deps lists After and Requires together, each id once.
func (a Agent) Deps() []string {
	out := append([]string(nil), a.Requires...)
	for _, id := range a.After {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Config is a validated config file.
type Config struct {
	// Path is the absolute path of the file (empty if Parse got none).
	Path string
	// Agents are in file order; ids and identities are unique.
	Agents []Agent
	// Lease, when not nil, holds the agents' identities in etcd too
	// (except those with LeaseLocal); nil: on this machine only.
	Lease *Lease
	// Source is what was parsed: a successor of the service (an
	// upgrade) runs the same config, whatever the file holds by then.
	Source []byte
}

//go:embed default.yaml
var defaultYAML []byte

// Default returns the embedded default config, the file "tether config
// init" writes for the user to edit. The caller may modify the slice.
func Default() []byte {
	return append([]byte(nil), defaultYAML...)
}

// DefaultPath returns where the config lives when --config is not given:
// $XDG_CONFIG_HOME/tether/agents.yaml (else ~/.config/tether/agents.yaml)
// on Linux, ~/Library/Application Support/tether/agents.yaml on macOS,
// %AppData%\tether\agents.yaml on Windows.
func DefaultPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %w", err)
	}
	return filepath.Join(dir, "tether", "agents.yaml"), nil
}

// Load reads, parses and validates the config file at path. Problems come
// back as *Error, or Errors when there are several.
func Load(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

func readConfig(path string) ([]byte, error) {
	fail := func(msg string, err error) error {
		return &Error{File: path, Msg: msg, Err: err}
	}
	// Stat first so that a FIFO or a device is refused instead of blocking
	// or being read forever; Stat follows symlinks, which are fine.
	fi, err := os.Stat(path)
	if err != nil {
		msg := "cannot read the config: " + cause(err)
		if errors.Is(err, fs.ErrNotExist) {
			msg += " (run \"tether config init\" to write the default one)"
		}
		return nil, fail(msg, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fail("the config is not a regular file ("+fileKind(fi.Mode())+")", nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail("cannot read the config: "+cause(err), err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, fail("cannot read the config: "+cause(err), err)
	}
	if len(data) > maxConfigSize {
		return nil, fail(fmt.Sprintf("the config is larger than %d MiB", maxConfigSize>>20), nil)
	}
	return data, nil
}

// WriteDefault writes Default() to path for "tether config init": missing
// directories are created 0700, the file 0600. It never overwrites: if
// anything is already at path the error wraps ErrExists.
func WriteDefault(path string) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing the default config: %w", err)
	}
	// O_EXCL refuses any existing entry, a dangling symlink included.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return &fs.PathError{Op: "write default config", Path: path, Err: ErrExists}
	}
	if err != nil {
		return fmt.Errorf("writing the default config: %w", err)
	}
	// A failed write leaves no half file behind to be refused next time.
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}()
	if _, err := f.Write(defaultYAML); err != nil {
		return fmt.Errorf("writing the default config: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing the default config: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the default config: %w", err)
	}
	return nil
}

// cause is the OS's reason without the op and path an *fs.PathError adds.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}
