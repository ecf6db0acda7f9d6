package tray

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/godbus/dbus/v5"
)

const watcherName = "org.kde.StatusNotifierWatcher"

// checkHost makes sure that the tray has somewhere to go before systray
// starts: a session bus (fyne.io/systray panics in Quit without one, and
// godbus would otherwise try to autolaunch a bus of its own through
// dbus-launch), and a StatusNotifierItem host on it, which it waits up to
// wait for. It leaves DBUS_SESSION_BUS_ADDRESS set to the bus it checked,
// so that systray and the notifications use that one.
func checkHost(wait time.Duration) error {
	addr := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if addr == "" || addr == "autolaunch:" {
		// The bus of a systemd user session, where desktops put it.
		if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
			if fi, err := os.Stat(filepath.Join(d, "bus")); err == nil && fi.Mode().Type() == os.ModeSocket {
				addr = "unix:path=" + dbus.EscapeBusAddressValue(filepath.Join(d, "bus"))
			}
		}
		if addr == "" || addr == "autolaunch:" {
			return fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus; the tray runs inside a desktop session", ErrNoSessionBus)
		}
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		return fmt.Errorf("%w: connecting to %s: %v", ErrNoSessionBus, addr, err)
	}
	defer conn.Close()
	if err := os.Setenv("DBUS_SESSION_BUS_ADDRESS", addr); err != nil {
		return err
	}

	// Subscribe before asking, so an owner that appears in between is
	// not missed.
	if err := conn.AddMatchSignal(
		dbus.WithMatchObjectPath("/org/freedesktop/DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, watcherName),
	); err != nil {
		return fmt.Errorf("%w: watching for %s: %v", ErrNoSessionBus, watcherName, err)
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	var has bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, watcherName).Store(&has); err != nil {
		return fmt.Errorf("%w: asking for %s: %v", ErrNoSessionBus, watcherName, err)
	}
	if has {
		return nil
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case sig, ok := <-signals:
			if !ok {
				return fmt.Errorf("%w: the session bus closed the connection", ErrNoSessionBus)
			}
			if len(sig.Body) == 3 {
				if owner, _ := sig.Body[2].(string); owner != "" {
					return nil
				}
			}
		case <-deadline.C:
			return fmt.Errorf("%w: nothing on the session bus owns %s (waited %v). The desktop's panel needs a tray that shows StatusNotifierItems: on GNOME, the AppIndicator extension; on Xfce, the Status Tray plugin", ErrNoTrayHost, watcherName, wait)
		}
	}
}
