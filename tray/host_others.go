//go:build !linux

package tray

import (
	"context"
	"time"
)

// watcherName: only Linux desktops have a tray host to wait for.
const watcherName = "the system tray"

// prepareBus: Windows and macOS have no session bus to find.
func prepareBus() error { return nil }

// waitHost: on Windows and macOS the tray is part of the desktop itself.
func waitHost(context.Context, time.Duration, func()) error { return nil }
