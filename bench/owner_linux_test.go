package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/wire"
)

// ownerAnswer is the line an owner process prints once its guardian has
// answered.
type ownerAnswer struct {
	OwnerPID int         `json:"owner_pid"`
	Ready    *wire.Ready `json:"ready,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// runOwner is the owner process, a stand-in for the service: it reads a
// guardian.Spec as JSON on stdin, starts a guardian, prints an ownerAnswer
// line and holds the session until stdin reaches EOF (the driver is done
// or gone) or it is killed. Its life is bounded by the driver's: a driver
// that dies closes the pipe.
func runOwner([]string) int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench owner: reading the spec:", err)
		return 1
	}
	var spec guardian.Spec
	if err := json.Unmarshal(line, &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench owner: decoding the spec:", err)
		return 1
	}
	a := ownerAnswer{OwnerPID: os.Getpid()}
	s, err := guardian.Start(context.Background(), spec)
	if err != nil {
		a.Error = err.Error()
	} else {
		r := s.Ready()
		a.Ready = &r
	}
	b, _ := json.Marshal(a)
	fmt.Printf("%s\n", b)
	if err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, in)
	// Dropping the tether is the owner's death as the guardian sees it;
	// wait for it to tear down and be reaped, so it is no zombie here.
	s.Close()
	select {
	case <-s.Done():
	case <-time.After(waitLimit):
		fmt.Fprintln(os.Stderr, "bench owner: the guardian did not exit after the tether closed")
		return 1
	}
	return 0
}

// owner is the driver's handle on an owner process.
type owner struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *testproc.Buffer
	answer ownerAnswer

	waitOnce sync.Once
	waitErr  error
}

// startOwner starts the test binary as an owner of spec and returns once
// the owner has answered. The owner is started (and must be waited for,
// see wait) whenever the returned owner is not nil, even with an error.
func startOwner(spec guardian.Spec) (*owner, error) {
	req, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	o := &owner{cmd: testproc.Command("owner"), stderr: &testproc.Buffer{}}
	o.cmd.Stderr = o.stderr
	if o.stdin, err = o.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := o.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := o.cmd.Start(); err != nil {
		return nil, err
	}
	if _, err := o.stdin.Write(append(req, '\n')); err != nil {
		return o, o.failed(fmt.Errorf("sending the spec: %w", err))
	}
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		got <- result{line, err}
	}()
	var r result
	select {
	case r = <-got:
	case <-time.After(waitLimit):
		// Killing the owner ends the read.
		_ = o.cmd.Process.Kill()
		<-got
		return o, o.failed(fmt.Errorf("no answer within %v", waitLimit))
	}
	if r.err != nil {
		return o, o.failed(fmt.Errorf("reading the answer: %w", r.err))
	}
	if err := json.Unmarshal(r.line, &o.answer); err != nil {
		return o, o.failed(fmt.Errorf("answer %q: %w", r.line, err))
	}
	if o.answer.Error != "" || o.answer.Ready == nil {
		return o, o.failed(fmt.Errorf("guardian did not start: %s", o.answer.Error))
	}
	return o, nil
}

// failed wraps err with what the owner wrote on stderr.
func (o *owner) failed(err error) error {
	if s := strings.TrimSpace(o.stderr.String()); s != "" {
		return fmt.Errorf("owner process: %w (stderr: %s)", err, s)
	}
	return fmt.Errorf("owner process: %w", err)
}

// kill SIGKILLs the owner; an owner already gone is no error.
func (o *owner) kill() error {
	if err := o.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// wait closes the owner's stdin, which ends an owner that is still
// running, and reaps it. Calling it again returns the same result.
func (o *owner) wait() error {
	o.waitOnce.Do(func() {
		o.stdin.Close()
		o.waitErr = o.cmd.Wait()
	})
	return o.waitErr
}
