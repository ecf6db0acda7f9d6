//go:build !linux

package tray

import "time"

// checkHost: on Windows and macOS the tray is part of the desktop itself.
func checkHost(time.Duration) error { return nil }
