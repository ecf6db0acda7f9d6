//go:build darwin && !cgo

package tray

import "errors"

// runUI: fyne.io/systray needs cgo on macOS. The rest of tether works
// without it.
func runUI(*engine, func(ui)) error {
	return errors.New("this tether has no tray: it was built without cgo (CGO_ENABLED=0), and the macOS menu bar item needs cgo; build tether with CGO_ENABLED=1 and Xcode's command-line tools")
}
