package tests

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A tether command on a terminal asks the terminal nothing: no OSC 11
// (its background colour), no cursor-position request. On a terminal
// that answers neither (a pseudo-terminal whose other end is a program,
// as script(1) gives here), the question made every command wait 5 s.
func TestCommandsAskTheTerminalNothing(t *testing.T) {
	needTools(t, "script")
	for _, args := range []string{"version", "status"} {
		t.Run(args, func(t *testing.T) {
			w := newWorld(t)
			// script runs the command on a new pseudo-terminal and
			// copies what it writes there, escapes and all.
			cmd := exec.Command("script", "--quiet", "--return", "--command", tether+" "+args, "/dev/null")
			cmd.Env = append(w.env, "TERM=xterm-256color")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			// Its exit status is the command's (status: 3, no service);
			// only a wait is a failure.
			var exit *exec.ExitError
			if err := runBoundedErr(cmd, 4*time.Second); err != nil && !errors.As(err, &exit) {
				t.Fatalf("tether %s on a terminal that answers nothing: %v (it waits for an answer):\n%q", args, err, out.String())
			}
			for _, q := range []string{"\x1b]11;?", "\x1b[6n"} {
				if strings.Contains(out.String(), q) {
					t.Errorf("tether %s asked the terminal %q:\n%q", args, q, out.String())
				}
			}
			if !strings.Contains(out.String(), "tether") {
				t.Errorf("tether %s wrote nothing of its own on the terminal:\n%q", args, out.String())
			}
		})
	}
}
