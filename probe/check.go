package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"time"
)

// Check is one probe of an agent.
type Check interface {
	// Probe runs the check once; nil means it passed. The context
	// bounds it.
	Probe(ctx context.Context) error
	// String says what is checked, for logs and status.
	String() string
}

// FailedError is a check that ran and did not pass, as opposed to a
// context that ended first.
type FailedError struct {
	Check string // what was checked
	Err   error
}

func (e *FailedError) Error() string { return e.Check + ": " + e.Err.Error() }
func (e *FailedError) Unwrap() error { return e.Err }

func failed(c Check, err error) error { return &FailedError{Check: c.String(), Err: err} }

// TCP passes when a connection to Addr (host:port) is accepted.
type TCP struct{ Addr string }

func (t TCP) String() string { return "tcp " + t.Addr }

// Probe implements Check.
func (t TCP) Probe(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", t.Addr)
	if err != nil {
		return failed(t, err)
	}
	return c.Close()
}

// Exec passes when its command exits 0. The command runs with Env in Dir
// and is killed when the context ends. Its output is kept for the failure
// message, at most a few hundred bytes of it.
type Exec struct {
	// Path is the program, resolved; empty: Argv[0] looked up in the
	// caller's PATH.
	Path string
	Argv []string
	Dir  string
	Env  []string
	// Run runs the command; nil runs it with os/exec. A caller that
	// reaps its own children (a child subreaper) passes one that goes
	// through its reaper.
	Run Runner
}

// Cmd is a check's process.
type Cmd struct {
	Path string
	Argv []string
	Dir  string
	Env  []string
}

// Runner runs c to its end, its output (stdout and stderr) into out, and
// kills it when ctx ends. It returns nil for an exit status of 0.
type Runner func(ctx context.Context, c Cmd, out io.Writer) error

func (e Exec) String() string { return "exec " + strings.Join(e.Argv, " ") }

// Probe implements Check.
func (e Exec) Probe(ctx context.Context) error {
	if len(e.Argv) == 0 {
		return failed(e, errors.New("no command"))
	}
	run := e.Run
	if run == nil {
		run = runExec
	}
	var out tail
	c := Cmd{Path: e.Path, Argv: e.Argv, Dir: e.Dir, Env: e.Env}
	if err := run(ctx, c, &out); err != nil {
		if s := strings.TrimSpace(out.String()); s != "" {
			err = fmt.Errorf("%w: %s", err, s)
		}
		return failed(e, err)
	}
	return nil
}

func runExec(ctx context.Context, c Cmd, out io.Writer) error {
	path := c.Path
	if path == "" {
		path = c.Argv[0]
	}
	cmd := exec.CommandContext(ctx, path, c.Argv[1:]...)
	cmd.Args[0] = c.Argv[0]
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdout, cmd.Stderr = out, out
	// A check that leaves a child holding its output must not hang the
	// probe past its context.
	cmd.WaitDelay = 100 * time.Millisecond
	return cmd.Run()
}

// tail keeps the last bytes written to it.
type tail struct{ b []byte }

const tailMax = 512

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = t.b[len(t.b)-tailMax:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }
