package tray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Errors of Main's checks, matched with errors.Is.
var (
	// ErrNoSessionBus: there is no D-Bus session bus to put a tray on
	// (Linux): not in a desktop session.
	ErrNoSessionBus = errors.New("no D-Bus session bus")
	// ErrNoTrayHost: nothing on the session bus shows tray items (no
	// StatusNotifierWatcher): the panel has no tray, or GNOME lacks the
	// AppIndicator extension.
	ErrNoTrayHost = errors.New("no system tray host")
	// ErrNoTray: this build of tether has no tray (macOS without cgo).
	ErrNoTray = errors.New("this tether has no tray")
)

// hostWait is how long the tray waits for a tray host to appear: at
// login, the tray may start before the panel does.
const hostWait = 10 * time.Second

// Main runs the tray until it is quit (its menu, SIGINT, SIGTERM) and
// returns the exit code: 0, 1 when it cannot run (no session bus, no tray
// host, no tray in this build), 2 for arguments.
func Main(o Options) int {
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if len(o.Args) > 0 {
		fmt.Fprintf(o.Stderr, "tether tray: takes no arguments, got %q\n", strings.Join(o.Args, " "))
		return 2
	}
	if err := checkHost(hostWait); err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runUI(ctx, o, osDeps()); err != nil {
		fmt.Fprintf(o.Stderr, "tether tray: %v\n", err)
		return 1
	}
	return 0
}
