package secret

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tether-dev/tether/service/config"
)

// Timeout bounds the reading of one secret: a command's run, or the
// keychain's answer (which may wait for the person to unlock it).
const Timeout = 30 * time.Second

// MaxValue bounds a secret's value, in bytes: it becomes an environment
// variable.
const MaxValue = 64 << 10

// The causes of an *Error, for errors.Is.
var (
	// ErrNotFound: the keychain has no such entry.
	ErrNotFound = errors.New("not in the keychain")
	// ErrTimeout: the command or the keychain did not answer within
	// Timeout.
	ErrTimeout = errors.New("timed out")
	// ErrEmpty: the value is empty (a command that printed nothing).
	ErrEmpty = errors.New("empty")
	// ErrInvalid: the value cannot be an environment variable's: it holds
	// a NUL byte, or is larger than MaxValue.
	ErrInvalid = errors.New("not usable as an environment variable")
	// ErrCommand: the command could not be run, or it failed.
	ErrCommand = errors.New("command failed")
	// ErrKeychain: the keychain could not be reached, unlocked or read.
	ErrKeychain = errors.New("keychain unavailable")
)

// Error is a secret that could not be read: the variable Name, its
// reference, and why. Its message never holds a value.
type Error struct {
	Name   string
	Ref    config.SecretRef
	Reason string
	// Err is one of the causes above, wrapping what the keychain or the
	// command said where there is more.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("secret %s (%s): %s", e.Name, e.Ref, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// Resolve reads every secret of agent a, in name order, for the service
// of profile, and returns the values by variable name. Commands run in
// the agent's dir (the caller's own when it has none) with env as their
// environment; they never see the agent's own variables. The first
// secret that cannot be read ends it with an *Error.
func Resolve(ctx context.Context, profile string, a config.Agent, env []string) (map[string]string, error) {
	out := make(map[string]string, len(a.Secrets))
	for _, name := range a.SecretNames() {
		ref := a.Secrets[name]
		var v string
		var err *Error
		if ref.Exec != nil {
			v, err = runCommand(ctx, ref.Exec, a.Dir, env)
		} else {
			v, err = get(ctx, profile, a.ID, name, ref.Keyring)
		}
		if err == nil {
			err = check(v)
		}
		if err != nil {
			err.Name, err.Ref = name, ref
			clear(out)
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// check refuses a value that cannot be an environment variable's.
func check(v string) *Error {
	switch {
	case v == "":
		return &Error{Reason: "the value is empty", Err: ErrEmpty}
	case len(v) > MaxValue:
		return &Error{Reason: fmt.Sprintf("the value is larger than %d KiB", MaxValue>>10), Err: ErrInvalid}
	case strings.IndexByte(v, 0) >= 0:
		return &Error{Reason: "the value contains a NUL byte", Err: ErrInvalid}
	}
	return nil
}

// CheckValue says why v cannot be stored as a secret's value, or nil.
func CheckValue(v string) error {
	if e := check(v); e != nil {
		return fmt.Errorf("%s: %w", e.Reason, e.Err)
	}
	return nil
}
