package testproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// readyEnv tells a helper where its readiness pipe is: the descriptor on
// Unix, the handle on Windows.
const readyEnv = "TETHER_TEST_READY"

// A Ready is a readiness pipe: the helpers it is passed to, and those they
// pass it on to, announce themselves on it with Announce, one line each,
// and the test reads the lines with a deadline instead of sleeping or
// polling until they are up.
type Ready struct {
	r, w *os.File

	mu   sync.Mutex
	buf  []string      // lines read and not yet taken
	err  error         // why reading ended, once it has
	more chan struct{} // signalled when buf or err changes
}

// NewReady returns a readiness pipe that is closed when the test ends.
func NewReady(t testing.TB) *Ready {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rp := &Ready{r: r, w: w, more: make(chan struct{}, 1)}
	// A goroutine reads, so that a deadline works on every OS (an
	// anonymous pipe on Windows has none); closing both ends ends it once
	// the helpers are gone, which the cleanups registered after this one
	// see to first.
	go rp.read()
	t.Cleanup(func() {
		w.Close()
		r.Close()
	})
	return rp
}

func (rp *Ready) read() {
	br := bufio.NewReader(rp.r)
	for {
		line, err := br.ReadString('\n')
		rp.mu.Lock()
		if err != nil {
			rp.err = err
		} else {
			rp.buf = append(rp.buf, strings.TrimSuffix(line, "\n"))
		}
		rp.mu.Unlock()
		select {
		case rp.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// Line returns the next line a helper announced, waiting for it at most
// within.
func (rp *Ready) Line(within time.Duration) (string, error) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		rp.mu.Lock()
		if len(rp.buf) > 0 {
			line := rp.buf[0]
			rp.buf = rp.buf[1:]
			rp.mu.Unlock()
			return line, nil
		}
		err := rp.err
		rp.mu.Unlock()
		if err != nil {
			return "", fmt.Errorf("reading the readiness pipe: %w", err)
		}
		select {
		case <-rp.more:
		case <-timer.C:
			return "", fmt.Errorf("no readiness line within %v", within)
		}
	}
}

// Pass makes the helper cmd runs inherit the pipe, and tells it where
// through its environment. On Unix the pipe goes after cmd.ExtraFiles:
// set those first.
func (rp *Ready) Pass(cmd *exec.Cmd) { pass(cmd, rp.w) }

// Announce writes line to the readiness pipe this helper inherited, in one
// write, so that the lines of helpers sharing the pipe do not mix as long
// as each is shorter than 512 bytes. Without a pipe it does nothing.
func Announce(line string) error {
	if ready == nil {
		return nil
	}
	if strings.Contains(line, "\n") {
		return fmt.Errorf("readiness line %q has a newline", line)
	}
	_, err := ready.Write([]byte(line + "\n"))
	return err
}

// PassOn makes a helper that this helper starts inherit the readiness pipe
// this one inherited, if any (see Pass).
func PassOn(cmd *exec.Cmd) {
	if ready != nil {
		pass(cmd, ready)
	}
}

// ready is the readiness pipe this helper inherited, nil if none.
var ready *os.File

// takeReady takes the readiness pipe a helper inherited, and takes its
// name out of the environment: what the helper starts gets the pipe only
// through PassOn, never a name for a descriptor it does not have.
func takeReady() {
	v, ok := os.LookupEnv(readyEnv)
	if !ok {
		return
	}
	os.Unsetenv(readyEnv)
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		ready = adopt(uintptr(n))
	}
}

// withReady is env with readyEnv set to v, and only there.
func withReady(env []string, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, readyEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, readyEnv+"="+v)
}
