package tray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

// errNoSessionBus: there is no D-Bus session bus to put a tray on: not in
// a desktop session.
var errNoSessionBus = errors.New("no D-Bus session bus")

const watcherName = "org.kde.StatusNotifierWatcher"

// prepareBus makes sure that the tray has a session bus before systray
// or the notifications use one (fyne.io/systray panics in Quit without
// one, and godbus would otherwise try to autolaunch a bus of its own
// through dbus-launch). It leaves DBUS_SESSION_BUS_ADDRESS set to the bus
// it found, so that everything after uses that one.
func prepareBus() error {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" || addr == "autolaunch:" {
		// The bus of a systemd user session, where desktops put it.
		if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
			if fi, err := os.Stat(filepath.Join(d, "bus")); err == nil && fi.Mode().Type() == os.ModeSocket {
				addr = "unix:path=" + dbus.EscapeBusAddressValue(filepath.Join(d, "bus"))
			}
		}
		if addr == "" || addr == "autolaunch:" {
			return fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus; the tray runs inside a desktop session", errNoSessionBus)
		}
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return fmt.Errorf("%w: connecting to %s: %v", errNoSessionBus, addr, err)
	}
	conn.Close()
	return os.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
}

// waitHost returns once a StatusNotifierItem host is on the session bus
// (someone owns org.kde.StatusNotifierWatcher), or ctx's error once ctx
// is done. It learns of a host from the bus's NameOwnerChanged signal, so
// it sleeps until one appears: no polling. If there is none after wait,
// it calls late, once, and goes on waiting.
func waitHost(ctx context.Context, wait time.Duration, late func()) error {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	conn, err := dbus.Connect(addr)
	if err != nil {
		return fmt.Errorf("%w: connecting to %s: %v", errNoSessionBus, addr, err)
	}
	defer conn.Close()
	// Subscribe before asking, so an owner that appears in between is
	// not missed.
	if err := conn.AddMatchSignal(
		dbus.WithMatchObjectPath("/org/freedesktop/DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName),
	); err != nil {
		return fmt.Errorf("%w: watching for %s: %v", errNoSessionBus, watcherName, err)
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	var has bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, watcherName).Store(&has); err != nil {
		return fmt.Errorf("%w: asking for %s: %v", errNoSessionBus, watcherName, err)
	}
	if has {
		return nil
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case sig, ok := <-signals:
			if !ok {
				return fmt.Errorf("%w: the session bus closed the connection", errNoSessionBus)
			}
			if sig.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(sig.Body) != 3 {
				continue
			}
			if owner, _ := sig.Body[2].(string); owner != "" {
				return nil
			}
		case <-deadline.C:
			late()
		}
	}
}
