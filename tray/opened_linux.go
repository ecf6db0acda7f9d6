package tray

import (
	"context"
	"os"

	"github.com/godbus/dbus/v5"
)

// menuPath is where fyne.io/systray exports the tray's menu
// (com.canonical.dbusmenu).
const menuPath = "/StatusNotifierItem/menu"

// watchMenuOpens calls opened whenever a tray host is about to show the
// menu, until ctx is done, and reports whether it can. fyne.io/systray
// tells only of dbusmenu's "opened" event (TrayOpenedCh), which
// libdbusmenu-gtk hosts such as Xfce's panel never send; every host calls
// AboutToShow first. The library answers that call itself, so the tray
// watches for it from a monitor connection of its own
// (org.freedesktop.DBus.Monitoring.BecomeMonitor, which a session bus
// allows its own user), matching only those calls: it is woken by nothing
// else. A bus that refuses the monitor leaves the tray showing clock
// times instead of ages (input.AgeAsClock).
func watchMenuOpens(ctx context.Context, opened func()) bool {
	conn, err := dbus.Connect(os.Getenv("DBUS_SESSION_BUS_ADDRESS"))
	if err != nil {
		return false
	}
	rules := []string{
		"type='method_call',interface='com.canonical.dbusmenu',member='AboutToShow',path='" + menuPath + "'",
		"type='method_call',interface='com.canonical.dbusmenu',member='AboutToShowGroup',path='" + menuPath + "'",
		"type='method_call',interface='com.canonical.dbusmenu',member='Event',path='" + menuPath + "',arg1='opened'",
	}
	if call := conn.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, rules, uint32(0)); call.Err != nil {
		conn.Close()
		return false
	}
	msgs := make(chan *dbus.Message, 16)
	conn.Eavesdrop(msgs)
	go func() {
		defer conn.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-msgs:
				if !ok {
					return
				}
				if m.Type == dbus.TypeMethodCall {
					opened()
				}
			}
		}
	}()
	return true
}
