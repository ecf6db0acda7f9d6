//go:build darwin

package unix

import (
	"context"
	"errors"
)

// ErrNoUserManager reports that no systemd user manager answers: there is
// none outside Linux.
var ErrNoUserManager = errors.New("no systemd user manager on the session bus")

// SessionBusAddress is empty outside Linux: no user manager to ask.
func SessionBusAddress(lookup func(string) (string, bool)) string { return "" }

// ScopeUnitName returns name with the suffix a scope unit carries.
func ScopeUnitName(name string) string { return name + ".scope" }

// EnterScope always fails outside Linux.
func EnterScope(ctx context.Context, address, unit, description string) error {
	return ErrNoUserManager
}
