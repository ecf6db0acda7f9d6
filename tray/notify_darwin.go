//go:build darwin

package tray

import (
	"github.com/gen2brain/beeep"
	"github.com/tether-dev/tether/assets"
)

// desktopNotifier shows notices through gen2brain/beeep: on macOS the
// notification center (as Terminal, outside an app bundle) or
// AppleScript's display notification. Neither takes buttons, urgency or
// replacement from an unbundled program (UNUserNotificationCenter's
// actions need an app bundle with its own identifier), so the notices
// say what to do in words and the tray's menu has the actions.
type desktopNotifier struct{}

func newNotifier() *desktopNotifier {
	beeep.AppName = "tether"
	return &desktopNotifier{}
}

func (*desktopNotifier) onAction(func(action)) {}

func (*desktopNotifier) fileOf(func(action) string) {}

func (*desktopNotifier) notify(n notice) error {
	return beeep.Notify(n.Title, n.Body, assets.PNG(n.Icon))
}

func (*desktopNotifier) close() {}

// withdraw: a notification posted this way cannot be taken back.
func (*desktopNotifier) withdraw(string) error { return nil }
