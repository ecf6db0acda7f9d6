package power

import (
	"context"

	"github.com/godbus/dbus/v5"
)

// WatchSleep sends true when logind announces a suspend
// (org.freedesktop.login1.Manager.PrepareForSleep(true) on the system
// bus) and false when the machine is back, until ctx is done. Without a
// system bus it sends nothing; without logind nothing is ever announced.
// It only waits on the bus connection: no timer, no polling.
func WatchSleep(ctx context.Context, events chan<- bool) {
	conn, err := dbus.ConnectSystemBus()
	if err != nil {
		return
	}
	defer conn.Close()
	if err := conn.AddMatchSignal(
		dbus.WithMatchSender("org.freedesktop.login1"),
		dbus.WithMatchObjectPath("/org/freedesktop/login1"),
		dbus.WithMatchInterface("org.freedesktop.login1.Manager"),
		dbus.WithMatchMember("PrepareForSleep"),
	); err != nil {
		return
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	for {
		select {
		case <-ctx.Done():
			return
		case sig, ok := <-signals:
			if !ok {
				return
			}
			if sig.Name != "org.freedesktop.login1.Manager.PrepareForSleep" || len(sig.Body) != 1 {
				continue
			}
			if start, ok := sig.Body[0].(bool); ok {
				select {
				case events <- start:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}
