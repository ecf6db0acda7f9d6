package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/tether-dev/tether/platform"
)

// waitDelay is how long a command's output pipes may stay open after it
// ended or was killed (a child it left holds them): then they are closed.
const waitDelay = 2 * time.Second

// maxStderr bounds what is kept of a command's standard error, for the
// reason of a failure.
const maxStderr = 4 << 10

// runCommand runs argv without a shell, in dir with env, for at most
// Timeout (it and what it forked are killed then), and returns what it
// printed on standard output without one trailing newline. It reads
// nothing: its standard input is empty. A failure's reason quotes the
// last line of its standard error, which says why (not signed in, no such
// entry), never its standard output.
func runCommand(ctx context.Context, argv []string, dir string, env []string) (string, *Error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = waitDelay
	// A timeout kills what the command forked too (a password
	// manager's agent it started is not ours to keep).
	platform.IsolateGroup(cmd)
	defer platform.KillGroup(cmd)
	stdout := &capped{max: MaxValue + 2} // room for the newline dropped
	stderr := &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Started and waited for as the service's own child: the service
	// reaps every other child it has (the orphans it adopts), and would
	// take this one's exit status.
	err := platform.StartChild(cmd)
	if err == nil {
		err = platform.WaitChild(cmd)
	}
	out := stdout.b.Bytes()
	defer clear(out)
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", &Error{Reason: fmt.Sprintf("%s did not finish within %v%s", argv[0], Timeout, lastLine(stderr)), Err: ErrTimeout}
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot):
		return "", &Error{Reason: fmt.Sprintf("%s was not found in the service's PATH", argv[0]), Err: fmt.Errorf("%w: %w", ErrCommand, err)}
	case err != nil:
		var ee *exec.ExitError
		why := err.Error()
		if errors.As(err, &ee) {
			why = ee.ProcessState.String()
		}
		return "", &Error{Reason: fmt.Sprintf("%s: %s%s", argv[0], why, lastLine(stderr)), Err: fmt.Errorf("%w: %w", ErrCommand, err)}
	case stdout.over:
		return "", &Error{Reason: fmt.Sprintf("%s printed more than %d KiB", argv[0], MaxValue>>10), Err: ErrInvalid}
	}
	v := strings.TrimSuffix(string(out), "\n")
	v = strings.TrimSuffix(v, "\r")
	if v == "" {
		return "", &Error{Reason: fmt.Sprintf("%s printed nothing%s", argv[0], lastLine(stderr)), Err: ErrEmpty}
	}
	return v, nil
}

// lastLine is "; it said: LINE", the last non-blank line of a command's
// standard error, cut to 200 bytes, or "".
func lastLine(c *capped) string {
	lines := strings.Split(strings.TrimSpace(c.b.String()), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	if len(l) > 200 {
		l = strings.ToValidUTF8(l[:200], "") + "..."
	}
	return "; it said: " + l
}

// capped keeps the first max bytes written to it, and whether more came.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max - c.b.Len(); n > room {
		c.over = true
		p = p[:max(room, 0)]
	}
	c.b.Write(p)
	return n, nil
}
