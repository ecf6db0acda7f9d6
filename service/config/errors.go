package config

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Error is one problem with a config or env file. Its text reads
//
//	agents.yaml:12: agents[1].restart: "sometimes" is not one of never, on-failure, always
//
// File is the path as it was given (or the env_file path for a problem on
// one of its lines), Line is 1-based (0 when the problem is not on one
// line), Key is the path of the key in the config (agents[1].restart; index
// from 0), Msg says what is wrong and, where it helps, how to fix it. Err is
// the underlying cause, if any (for example an *fs.PathError), so that
// errors.Is(err, fs.ErrNotExist) works.
//
// Messages never quote values read from an env_file.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying cause, or nil.
func (e *Error) Unwrap() error { return e.Err }

// Errors is what Load and Parse return when a file has more than one
// problem, in the order they appear. errors.As finds each *Error in it.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// err returns nil, the only *Error, or all of them.
func (es Errors) err() error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return es
}

// ErrExists is the cause WriteDefault reports (inside an *fs.PathError that
// carries the path) when the file is already there; it refuses to
// overwrite a user's config. Both errors.Is(err, ErrExists) and
// errors.Is(err, fs.ErrExist) hold.
var ErrExists error = existsError{}

type existsError struct{}

func (existsError) Error() string {
	return "config file already exists; edit it, or move it away to write a fresh one"
}

func (existsError) Is(target error) bool { return target == fs.ErrExist }

// short quotes s for a message, cutting it when it is long.
func short(s string) string {
	const max = 40
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:max]), len(s))
}
