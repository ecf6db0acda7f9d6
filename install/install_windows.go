package install

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// Windows has no per-user service manager: kardianos/service would
// install a LocalSystem service in session 0 (it ignores UserService),
// which can neither show the tray nor own the user's agents. The login
// service and the tray are values under HKCU\...\Run instead, which
// Explorer runs at logon.

func getRunValue(name string) (value string, ok bool, err error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("opening HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	v, _, err := k.GetStringValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading %s: %w", runValuePath(name), err)
	}
	return v, true, nil
}

func setRunValue(name string, f File, what string) (Result, error) {
	old, ok, err := getRunValue(name)
	if err != nil {
		return Result{}, err
	}
	if ok && old == string(f.Content) {
		return Result{Paths: []string{f.Path}, Message: fmt.Sprintf("%s is already installed: %s is up to date", what, f.Path)}, nil
	}
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE|registry.SET_VALUE)
	if err != nil {
		return Result{}, fmt.Errorf("opening HKCU\\%s: %w", runKey, err)
	}
	defer k.Close()
	// One value, written in one call: there is nothing half-written to
	// undo if it fails.
	if err := k.SetStringValue(name, string(f.Content)); err != nil {
		return Result{}, fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return Result{Changed: true, Paths: []string{f.Path}, Message: fmt.Sprintf("installed %s: wrote %s; it starts at logon", what, f.Path)}, nil
}

func deleteRunValue(name, what string) (Result, error) {
	path := runValuePath(name)
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err == nil {
		defer k.Close()
		err = k.DeleteValue(name)
	}
	if errors.Is(err, registry.ErrNotExist) {
		return Result{Message: fmt.Sprintf("%s is not installed (no %s): nothing to remove", what, path)}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("removing %s: %w", path, err)
	}
	return Result{Changed: true, Paths: []string{path}, Message: fmt.Sprintf("uninstalled %s: removed %s", what, path)}, nil
}

func install(t target) (Result, error) {
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	name := serviceRunName(t)
	return setRunValue(name, runValue(name, t.args("service", "run")), "the tether service")
}

// uninstall removes the Run value. A running service is left running:
// nothing on Windows manages it, and the command line asks it to quit
// through the local API.
func uninstall(t target) (Result, error) {
	return deleteRunValue(serviceRunName(t), "the tether service")
}

// disable is uninstall: a Run value only starts the service at logon,
// and its removal stops nothing.
func disable(t target) (Result, error) {
	r, err := uninstall(t)
	if err == nil && r.Changed {
		r.Message = fmt.Sprintf("the tether service no longer starts at logon: removed %s (a running service goes on running)", runValuePath(serviceRunName(t)))
	}
	return r, err
}

// installedSettings: a Run value fixes neither a stop timeout nor a
// PATH; the service gets the user's environment at logon.
func installedSettings(t target) (Settings, bool, error) {
	_, ok, err := getRunValue(serviceRunName(t))
	return Settings{}, ok, err
}

// start runs the registered command line now, as Explorer would at
// logon: detached, in a new process group, with no console. The process
// is the service's, not ours, so its handle is released rather than
// waited for.
func start(t target) error {
	name := serviceRunName(t)
	v, ok, err := getRunValue(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: no %s (`tether service install` writes it)", ErrNotInstalled, runValuePath(name))
	}
	argv, err := windows.DecomposeCommandLine(v)
	if err != nil || len(argv) == 0 {
		return fmt.Errorf("%s holds an unreadable command line %q: %v", runValuePath(name), v, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP,
		HideWindow:    true,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", v, err)
	}
	return cmd.Process.Release()
}

// stop says there is no manager to stop through, whether or not a Run
// value is written: the caller asks the running service to quit through
// its local API, which stops a service the tray or a person started just
// the same (the uninstaller relies on it).
func stop(t target) error {
	return fmt.Errorf("%w: Windows has no per-user service manager to stop tether with; ask the running service to quit through its local API", ErrNoServiceManager)
}

func status(t target) (StatusInfo, error) {
	name := serviceRunName(t)
	f := runValue(name, t.args("service", "run"))
	info := StatusInfo{Manager: "HKCU Run", Name: name, Path: f.Path, State: StateUnknown,
		Detail: "Windows tracks no per-user service; the local API says whether it runs"}
	v, ok, err := getRunValue(name)
	if err != nil {
		return info, err
	}
	info.Installed, info.Current, info.Enabled, info.Reachable = ok, ok && v == string(f.Content), ok, true
	return info, nil
}

func installTray(t target) (Result, error) {
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	name := trayRunName(t)
	return setRunValue(name, runValue(name, t.args("tray", "--at-login")), "the tray's autostart entry")
}

func uninstallTray(t target) (Result, error) {
	return deleteRunValue(trayRunName(t), "the tray's autostart entry")
}

func trayInstalled(t target) (bool, error) {
	_, ok, err := getRunValue(trayRunName(t))
	return ok, err
}
