//go:build !linux

package tray

import (
	"context"
	"runtime"
)

// watchMenuOpens: on macOS, fyne.io/systray's TrayOpenedCh (menuWillOpen)
// tells when the menu opens, and runUI listens to it. Windows' binding
// tells nothing, so its menu shows clock times (input.AgeAsClock).
func watchMenuOpens(context.Context, func()) bool { return runtime.GOOS == "darwin" }
