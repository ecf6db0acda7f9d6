//go:build unix

package secret

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/service/config"
)

func execAgent(argv ...string) config.Agent {
	return config.Agent{ID: "a", Secrets: map[string]config.SecretRef{"TOKEN": {Exec: argv}}}
}

// A command's output is the value, without one trailing newline; it runs
// without a shell, with the environment given and an empty stdin.
func TestCommandValue(t *testing.T) {
	for _, tc := range []struct {
		script, want string
	}{
		{`printf 'v1\n'`, "v1"},
		{`printf 'v2'`, "v2"},
		{`printf 'v3\r\n'`, "v3"},
		{`printf 'two\nlines\n\n'`, "two\nlines\n"},
		{`printf '%s' "$GIVEN"`, "from-env"},
		{`cat; printf x`, "x"},
	} {
		got, err := Resolve(context.Background(), "p", execAgent("/bin/sh", "-c", tc.script), []string{"GIVEN=from-env", "PATH=" + os.Getenv("PATH")})
		if err != nil {
			t.Errorf("%s: %v", tc.script, err)
			continue
		}
		if got["TOKEN"] != tc.want {
			t.Errorf("%s: %q, want %q", tc.script, got["TOKEN"], tc.want)
		}
	}
	// The argv is the argv: a word with spaces and a $ is one argument,
	// not expanded.
	got, err := Resolve(context.Background(), "p", execAgent("/bin/echo", "a  b $HOME"), nil)
	if err != nil || got["TOKEN"] != "a  b $HOME" {
		t.Errorf("echo: %q, %v", got["TOKEN"], err)
	}
}

// A command that fails is a typed error naming the variable, the
// reference and what the command said on stderr, never what it printed
// on stdout.
func TestCommandFailures(t *testing.T) {
	const leaked = "s3cret-on-stdout"
	for _, tc := range []struct {
		name string
		argv []string
		ctx  time.Duration
		is   error
		says string
	}{
		{"exit status", []string{"/bin/sh", "-c", `printf "$LEAK"; echo '[ERROR] not signed in' >&2; exit 3`}, 0, ErrCommand, "exit status 3; it said: [ERROR] not signed in"},
		{"not found", []string{"no-such-password-manager", "read"}, 0, ErrCommand, "not found"},
		{"nothing printed", []string{"/bin/sh", "-c", "echo >&2 empty field"}, 0, ErrEmpty, "printed nothing; it said: empty field"},
		{"only a newline", []string{"/bin/sh", "-c", "echo"}, 0, ErrEmpty, "printed nothing"},
		{"NUL byte", []string{"/bin/sh", "-c", `printf 'a\000b'`}, 0, ErrInvalid, "NUL"},
		{"too large", []string{"/bin/sh", "-c", "head -c 70000 /dev/zero | tr '\\0' x"}, 0, ErrInvalid, "KiB"},
		{"timeout", []string{"/bin/sh", "-c", `printf "$LEAK"; sleep 100`}, 300 * time.Millisecond, ErrTimeout, "did not finish"},
		{"timeout, a child holding stdout", []string{"/bin/sh", "-c", "sleep 100 & sleep 100"}, 300 * time.Millisecond, ErrTimeout, "did not finish"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			start := time.Now()
			_, err := Resolve(ctx, "p", execAgent(tc.argv...), []string{"PATH=" + os.Getenv("PATH"), "LEAK=" + leaked})
			var se *Error
			if !errors.As(err, &se) || !errors.Is(err, tc.is) {
				t.Fatalf("err %v (%T), want an *Error that is %v", err, err, tc.is)
			}
			if se.Name != "TOKEN" || se.Ref.Exec == nil {
				t.Errorf("error names %s %v", se.Name, se.Ref)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.says) || !strings.HasPrefix(msg, "secret TOKEN (exec [") {
				t.Errorf("message %q, want it to name TOKEN and its command, and say %q", msg, tc.says)
			}
			if strings.Contains(msg, leaked) {
				t.Errorf("message quotes the command's stdout: %q", msg)
			}
			// A timeout kills what the command forked: no wait for its
			// sleeps, which hold its stdout.
			if d := time.Since(start); d > tc.ctx+waitDelay {
				t.Errorf("took %v", d)
			}
		})
	}
}
