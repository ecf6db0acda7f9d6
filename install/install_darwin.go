package install

import (
	"errors"
	"fmt"
	"os"

	"github.com/kardianos/service"
)

// launchd is always there on macOS; kardianos drives it with
// `launchctl load|unload|list` on the plist and label we write. kardianos
// finds the plist under the account's home directory (os/user), which is
// $HOME (Options.Home's default) in any ordinary session; overriding Home
// is for tests.

func launchdService(t target) (service.Service, error) {
	return kardianosService("darwin-launchd", launchdLabel("service", t))
}

func install(t target) (Result, error) {
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	f := launchdServicePlist(t)
	var tx fileTx
	changed, err := tx.write(f)
	if err != nil {
		return Result{}, tx.rollbackInto(err)
	}
	r := Result{Changed: changed, Paths: []string{f.Path}}
	label := launchdLabel("service", t)
	switch {
	case !changed:
		r.Message = fmt.Sprintf("%s is already installed: %s is up to date", label, f.Path)
	case running(t):
		r.Message = fmt.Sprintf("installed %s at %s; the running service keeps its old settings until `tether service stop` and `tether service start`", label, f.Path)
	default:
		r.Message = fmt.Sprintf("installed %s at %s: it starts at login (`tether service start` starts it now)", label, f.Path)
	}
	return r, nil
}

// disable removes the plist and unloads nothing: the service goes on
// running, and is not started at the next login.
func disable(t target) (Result, error) {
	p := launchAgentPath(t, launchdLabel("service", t))
	r, err := uninstallFile(p, launchdLabel("service", t))
	if err == nil && r.Changed {
		r.Message = fmt.Sprintf("%s no longer starts at login: removed %s (a running service goes on running)", launchdLabel("service", t), p)
	}
	return r, err
}

func installedSettings(t target) (Settings, bool, error) {
	b, err := os.ReadFile(launchAgentPath(t, launchdLabel("service", t)))
	if errors.Is(err, os.ErrNotExist) {
		return Settings{}, false, nil
	}
	if err != nil {
		return Settings{}, false, err
	}
	return plistSettings(b), true, nil
}

func running(t target) bool {
	s, err := launchdService(t)
	if err != nil {
		return false
	}
	st, err := s.Status()
	return err == nil && st == service.StatusRunning
}

func uninstall(t target) (Result, error) {
	f := launchdServicePlist(t)
	if ok, err := lexists(f.Path); err != nil {
		return Result{}, err
	} else if !ok {
		return uninstallFile(f.Path, launchdLabel("service", t))
	}
	s, err := launchdService(t)
	if err != nil {
		return Result{}, err
	}
	// launchctl unload fails for a job that is not loaded; only a job that
	// still runs afterwards keeps the plist in place.
	if err := s.Stop(); err != nil && running(t) {
		return Result{}, fmt.Errorf("unloading %s: %w; %s is left in place", f.Path, err, f.Path)
	}
	return uninstallFile(f.Path, launchdLabel("service", t))
}

func start(t target) error {
	s, err := controlled(t)
	if err != nil {
		return err
	}
	if running(t) {
		return nil
	}
	if err := s.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", launchdLabel("service", t), err)
	}
	return nil
}

func stop(t target) error {
	s, err := controlled(t)
	if err != nil {
		return err
	}
	if err := s.Stop(); err != nil && running(t) {
		return fmt.Errorf("stopping %s: %w", launchdLabel("service", t), err)
	}
	return nil
}

// controlled returns the kardianos service of an installed plist.
func controlled(t target) (service.Service, error) {
	p := launchAgentPath(t, launchdLabel("service", t))
	if ok, err := lexists(p); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: no %s (`tether service install` writes it)", ErrNotInstalled, p)
	}
	return launchdService(t)
}

func status(t target) (StatusInfo, error) {
	f := launchdServicePlist(t)
	info := StatusInfo{Manager: "launchd", Name: launchdLabel("service", t), Path: f.Path, State: StateUnknown}
	var err error
	if info.Installed, info.Current, err = readInstalled(f); err != nil {
		return info, err
	}
	info.Enabled, info.Reachable, info.Restarts = info.Installed, true, info.Installed
	s, err := launchdService(t)
	if err != nil {
		info.Detail = err.Error()
		return info, nil
	}
	switch st, err := s.Status(); {
	case st == service.StatusRunning:
		info.State = StateRunning
	case st == service.StatusStopped, errors.Is(err, service.ErrNotInstalled):
		info.State = StateStopped
	case err != nil:
		info.Detail = err.Error()
	}
	return info, nil
}

func installTray(t target) (Result, error) {
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	// Not loaded now: the tray is usually already running.
	return installFile(launchdTrayPlist(t), "the tray's login item")
}

// uninstallTray removes the plist only: `launchctl unload` would kill a
// tray that launchd started at login.
func uninstallTray(t target) (Result, error) {
	return uninstallFile(launchAgentPath(t, launchdLabel("tray", t)), "the tray's login item")
}

func trayInstalled(t target) (bool, error) {
	return lexists(launchAgentPath(t, launchdLabel("tray", t)))
}
