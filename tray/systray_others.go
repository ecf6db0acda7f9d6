//go:build !linux && !windows && !(darwin && cgo)

package tray

import (
	"fmt"
	"runtime"
)

// runUI: fyne.io/systray needs cgo on macOS, and has no tray for other
// systems. The rest of tether works without it.
func runUI(*engine, func(ui)) error {
	if runtime.GOOS == "darwin" {
		return fmt.Errorf("%w: it was built without cgo (CGO_ENABLED=0), and the macOS menu bar item needs cgo; build tether with CGO_ENABLED=1 and Xcode's command-line tools", ErrNoTray)
	}
	return fmt.Errorf("%w: no system tray support for %s", ErrNoTray, runtime.GOOS)
}
