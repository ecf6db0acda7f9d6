//go:build darwin

package scope

import (
	"context"
	"errors"
)

// ErrNoUserManager reports that no systemd user manager answers: there is
// none outside Linux.
var ErrNoUserManager = errors.New("no systemd user manager on the session bus")

// SessionBusAddress is empty outside Linux: no user manager to ask.
func SessionBusAddress(lookup func(string) (string, bool)) string { return "" }

// UnitName returns name with the suffix a scope unit carries.
func UnitName(name string) string { return name + ".scope" }

// Enter always fails outside Linux.
func Enter(ctx context.Context, address, unit, description string) error {
	return ErrNoUserManager
}
