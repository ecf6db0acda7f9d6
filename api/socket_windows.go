package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"strings"
	"time"

	pwindows "github.com/tether-dev/tether/platform/windows"
)

// SocketPath returns the named pipe of the service of profile,
// \\.\pipe\tether-<user>-<profile>. Pipe names are global to the machine:
// the user in the name keeps users apart, and the pipe's security
// descriptor (not its name) keeps others out.
func SocketPath(profile string) (string, error) {
	if err := checkProfile(profile); err != nil {
		return "", err
	}
	name := os.Getenv("USERNAME")
	if u, err := user.Current(); err == nil {
		name = u.Username // DOMAIN\user: unique across domains
	}
	if name == "" {
		return "", errors.New("cannot tell the current user's name")
	}
	return `\\.\pipe\tether-` + pipeSafe(name) + "-" + profile, nil
}

// pipeSafe maps what may not, or should not, appear in a pipe name
// (the separator \ above all) to '.'.
func pipeSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '.'
	}, s)
}

// dialTimeout bounds how long a dial waits while every instance of the
// pipe is taken: a unix socket's connect does not wait for a full backlog
// either, and a service that accepts nobody for this long is stuck.
const dialTimeout = 5 * time.Second

// dialSocket connects to the service's named pipe (see
// platform/windows.DialPipe: the client lets the service identify it, and
// refuses a pipe another user created). No pipe of that name is
// ErrNotRunning.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	c, err := pwindows.DialPipe(ctx, path, dialTimeout)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: nothing listens on %s", ErrNotRunning, path)
	}
	return c, err
}
