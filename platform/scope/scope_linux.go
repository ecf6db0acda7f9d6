package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/godbus/dbus/v5"

	punix "github.com/tether-dev/tether/platform/unix"
)

// ErrNoUserManager reports that no systemd user manager answers on the
// session bus: there is no bus, or nothing on it owns
// org.freedesktop.systemd1.
var ErrNoUserManager = errors.New("no systemd user manager on the session bus")

const (
	systemdName    = "org.freedesktop.systemd1"
	systemdPath    = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIface   = "org.freedesktop.systemd1.Manager"
	jobRemovedName = "JobRemoved"
)

// SessionBusAddress returns the session bus an environment names:
// DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus when that socket
// exists (where a user manager's dbus.socket listens, and what sd-bus
// falls back to). It is empty when the environment names none.
func SessionBusAddress(lookup func(string) (string, bool)) string {
	if a, ok := lookup("DBUS_SESSION_BUS_ADDRESS"); ok && a != "" {
		return a
	}
	if d, ok := lookup("XDG_RUNTIME_DIR"); ok && filepath.IsAbs(d) {
		p := filepath.Join(d, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			return "unix:path=" + dbus.EscapeBusAddressValue(p)
		}
	}
	return ""
}

// UnitName turns name into a valid name for a scope unit: characters
// systemd does not allow in a unit name become '_'.
func UnitName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b) + ".scope"
}

// Enter asks the user's systemd manager, on the session bus at address,
// to start a transient scope unit named unit (see UnitName) with
// Delegate=yes and the calling process in it, the call "systemd-run
// --user --scope" makes, and waits until the job has finished. From then
// on the process's cgroup v2 (punix.OwnCgroupDir) is the scope's,
// delegated to the user, so punix.NewCgroup works below it. The scope
// ends, and the manager collects it, once no process is left in it.
//
// Errors wrap ErrNoUserManager when no manager answers; any other error
// is a manager that answered but did not place the process. ctx bounds
// the whole exchange.
func Enter(ctx context.Context, address, unit, description string) error {
	if address == "" {
		return fmt.Errorf("%w: the environment names no session bus", ErrNoUserManager)
	}
	conn, err := dbus.Dial(address, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoUserManager, address, err)
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoUserManager, address, err)
	}
	if err := conn.Hello(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoUserManager, address, err)
	}
	// The manager sends JobRemoved to whoever queued the job; the match
	// lets the bus deliver it. Subscribed before the call, so the
	// signal cannot come first and be missed.
	if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchObjectPath(systemdPath),
		dbus.WithMatchInterface(managerIface), dbus.WithMatchMember(jobRemovedName)); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoUserManager, address, err)
	}
	signals := make(chan *dbus.Signal, 16)
	conn.Signal(signals)

	props := []struct {
		Name  string
		Value dbus.Variant
	}{
		{"Description", dbus.MakeVariant(description)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(os.Getpid())})},
		{"Delegate", dbus.MakeVariant(true)},
		// Collected even when it ends failed, so no unit piles up in
		// the manager.
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	aux := []struct {
		Name  string
		Props []struct {
			Name  string
			Value dbus.Variant
		}
	}{}
	var job dbus.ObjectPath
	// No auto-start: a bus that would activate a manager is no manager.
	call := conn.Object(systemdName, systemdPath).CallWithContext(ctx, managerIface+".StartTransientUnit",
		dbus.FlagNoAutoStart, unit, "fail", props, aux)
	if err := call.Store(&job); err != nil {
		var de dbus.Error
		if errors.As(err, &de) && (de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" || de.Name == "org.freedesktop.DBus.Error.NameHasNoOwner") {
			return fmt.Errorf("%w: nothing owns %s on %s", ErrNoUserManager, systemdName, address)
		}
		return fmt.Errorf("StartTransientUnit %s: %w", unit, err)
	}
	for {
		select {
		case s, ok := <-signals:
			if !ok {
				return fmt.Errorf("the session bus closed while waiting for the job of %s", unit)
			}
			if s.Name != managerIface+"."+jobRemovedName || len(s.Body) < 4 {
				continue
			}
			if path, _ := s.Body[1].(dbus.ObjectPath); path != job {
				continue
			}
			if result, _ := s.Body[3].(string); result != "done" {
				return fmt.Errorf("the job starting %s ended %q", unit, result)
			}
			return inScope(unit)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the job starting %s: %w", unit, ctx.Err())
		}
	}
}

// inScope checks that the calling process's cgroup v2 is now the scope's.
func inScope(unit string) error {
	dir, err := punix.OwnCgroupDir()
	if err != nil {
		return fmt.Errorf("after starting %s: %w", unit, err)
	}
	if filepath.Base(dir) != unit {
		return fmt.Errorf("%s started, but this process is in cgroup %s", unit, dir)
	}
	return nil
}
