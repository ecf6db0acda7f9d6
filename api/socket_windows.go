package api

import (
	"errors"
	"os"
	"os/user"
	"strings"
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
