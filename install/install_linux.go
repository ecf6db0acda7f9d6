package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// systemdBootDir exists exactly when systemd is the init system
// (sd_booted(3)). A variable so that tests can stand in a fake systemd.
var systemdBootDir = "/run/systemd/system"

// systemctlTimeout bounds every systemctl call we make ourselves.
const systemctlTimeout = 30 * time.Second

// CommandError is a failed command, with what it printed.
type CommandError struct {
	Args   []string
	Output string // stderr (or stdout when stderr was empty), trimmed
	Err    error
}

func (e *CommandError) Error() string {
	s := strings.Join(e.Args, " ") + ": " + e.Err.Error()
	if e.Output != "" {
		s += ": " + e.Output
	}
	return s
}

func (e *CommandError) Unwrap() error { return e.Err }

// systemctl runs `systemctl --user args...` and returns its stdout, which
// is also returned on failure (is-active prints its answer and exits 3).
func systemctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), systemctlTimeout)
	defer cancel()
	argv := append([]string{"systemctl", "--user"}, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		out := strings.TrimSpace(stderr.String())
		if out == "" {
			out = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), &CommandError{Args: argv, Output: out, Err: err}
	}
	return stdout.String(), nil
}

// systemdWantsLink is the symlink `systemctl --user enable` creates for
// WantedBy=default.target.
func systemdWantsLink(t target) string {
	return filepath.Join(systemdUnitDir(t), "default.target.wants", unitName(t))
}

func systemdBooted() bool {
	fi, err := os.Lstat(systemdBootDir)
	return err == nil && fi.IsDir()
}

// probeUserManager checks that there is a systemd user manager to talk to:
// systemd is init, and `systemctl --user` reaches the user's manager.
func probeUserManager() error {
	if !systemdBooted() {
		return fmt.Errorf("%w: systemd is not the init system here (no %s), so there is no systemd user manager to register with; run `tether service run` from your session's startup instead", ErrNoServiceManager, systemdBootDir)
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		return fmt.Errorf("%w: systemctl: %v", ErrNoServiceManager, err)
	}
	if _, err := systemctl("show", "--property=Version"); err != nil {
		return fmt.Errorf("%w: `systemctl --user` cannot reach your user manager (outside a login session, e.g. under su or sudo, XDG_RUNTIME_DIR is usually unset): %v", ErrNoServiceManager, err)
	}
	return nil
}

func install(t target) (Result, error) {
	f := systemdService(t)
	unit := unitName(t)
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	// Before anything is written: with no manager, nothing is.
	if err := probeUserManager(); err != nil {
		return Result{}, err
	}
	wasEnabled, err := lexists(systemdWantsLink(t))
	if err != nil {
		return Result{}, err
	}
	var tx fileTx
	changed, err := tx.write(f)
	if err != nil {
		return Result{}, tx.rollbackInto(err)
	}
	if t.packaged {
		// A unit of the user's own, written by an install before the
		// package, would hide the packaged one.
		removed, err := tx.removeOurs(unitPath(t))
		if err != nil {
			return Result{}, tx.rollbackInto(err)
		}
		changed = changed || removed
	} else {
		// A drop-in for the packaged unit would change this one too.
		removed, err := tx.removeOurs(dropInPath(t))
		if err != nil {
			return Result{}, tx.rollbackInto(err)
		}
		changed = changed || removed
	}
	fail := func(err error) (Result, error) {
		err = tx.rollbackInto(fmt.Errorf("installing %s: %w", unit, err))
		if changed {
			// Make the manager forget the content it may have loaded.
			systemctl("daemon-reload")
		}
		return Result{}, err
	}
	if changed {
		if _, err := systemctl("daemon-reload"); err != nil {
			return fail(err)
		}
	}
	if _, err := systemctl("enable", unit); err != nil {
		return fail(err)
	}
	r := Result{Changed: changed || !wasEnabled, Paths: []string{f.Path}}
	switch {
	case !r.Changed:
		r.Message = fmt.Sprintf("%s is already installed and enabled: %s is up to date", unit, f.Path)
	case changed && isActive(unit):
		r.Message = fmt.Sprintf("installed %s at %s; the running service keeps its old settings until `tether service stop` and `tether service start`", unit, f.Path)
	default:
		r.Message = fmt.Sprintf("installed %s at %s: it starts at login (`tether service start` starts it now)", unit, f.Path)
	}
	return r, nil
}

func uninstall(t target) (Result, error) {
	unit, path, link, dropIn := unitName(t), unitPath(t), systemdWantsLink(t), dropInPath(t)
	haveUnit, err := lexists(path)
	if err != nil {
		return Result{}, err
	}
	haveLink, err := lexists(link)
	if err != nil {
		return Result{}, err
	}
	haveDropIn, err := lexists(dropIn)
	if err != nil {
		return Result{}, err
	}
	if !haveUnit && !haveLink && !haveDropIn {
		return Result{Message: fmt.Sprintf("%s is not installed (no %s): nothing to remove", unit, systemdService(t).Path)}, nil
	}
	var r Result
	if systemdBooted() {
		// A user manager may be running the service: stop and disable it
		// first, and remove nothing if that cannot be done.
		if err := probeUserManager(); err != nil {
			return Result{}, fmt.Errorf("%w; %s is left in place because the service could not be stopped", err, systemdService(t).Path)
		}
		if haveUnit || t.packaged {
			if _, err := systemctl("disable", "--now", unit); err != nil {
				return Result{}, fmt.Errorf("stopping and disabling %s: %w", unit, err)
			}
		}
	}
	// Remove the enable link (which `disable` normally took already; without
	// systemd as init nothing can run the unit and nobody else will), the
	// unit and the drop-in.
	for _, p := range []string{link, path, dropIn} {
		if p == link && !isSymlink(link) {
			continue
		}
		removed, err := removeFile(p)
		if err != nil {
			return r, err
		}
		if removed {
			r.Changed = true
			r.Paths = append(r.Paths, p)
		}
	}
	// Its directory, if nothing else is in it.
	_ = os.Remove(filepath.Dir(dropIn))
	if r.Changed {
		r.Message = fmt.Sprintf("uninstalled %s: removed %s", unit, strings.Join(r.Paths, ", "))
	} else {
		r.Message = fmt.Sprintf("%s is not installed (no %s): nothing to remove", unit, path)
	}
	if systemdBooted() {
		if _, err := systemctl("daemon-reload"); err != nil {
			return r, fmt.Errorf("removed %s, but the user manager was not reloaded: %w", strings.Join(r.Paths, ", "), err)
		}
	}
	return r, nil
}

// disable removes the enable link and stops nothing: `systemctl --user
// disable`, without --now; the unit stays, so Install enables it again.
func disable(t target) (Result, error) {
	unit, path, link := unitName(t), unitPath(t), systemdWantsLink(t)
	haveLink, err := lexists(link)
	if err != nil {
		return Result{}, err
	}
	if !haveLink {
		return Result{Message: fmt.Sprintf("%s does not start at login (no %s): nothing to disable", unit, link)}, nil
	}
	if systemdBooted() && probeUserManager() == nil {
		if _, err := systemctl("disable", unit); err != nil {
			return Result{}, fmt.Errorf("disabling %s: %w", unit, err)
		}
	} else if _, err := removeFile(link); err != nil {
		return Result{}, err
	}
	msg := fmt.Sprintf("%s no longer starts at login (%s is kept; a running service goes on running)", unit, path)
	return Result{Changed: true, Paths: []string{link}, Message: msg}, nil
}

func installedSettings(t target) (Settings, bool, error) {
	b, err := os.ReadFile(systemdService(t).Path)
	if errors.Is(err, os.ErrNotExist) {
		return Settings{}, false, nil
	}
	if err != nil {
		return Settings{}, false, err
	}
	return unitSettings(b), true, nil
}

func isSymlink(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}

func isActive(unit string) bool {
	out, _ := systemctl("is-active", unit)
	return strings.TrimSpace(out) == "active"
}

// systemdDiagnosis says what systemd knows about unit, for errors from
// kardianos (whose command runner drops systemctl's stderr).
func systemdDiagnosis(unit string) string {
	out, err := systemctl("show", "--property=LoadState,ActiveState,SubState,Result", unit)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" (%s; see `journalctl --user -u %s`)", strings.Join(strings.Fields(out), ", "), unit)
}

// systemdControl runs a kardianos action after the checks kardianos does
// not make.
func systemdControl(t target, verb string) error {
	unit, path := unitName(t), systemdService(t).Path
	if ok, err := lexists(path); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: no %s (`tether service install` writes it)", ErrNotInstalled, path)
	}
	if err := probeUserManager(); err != nil {
		return err
	}
	s, err := kardianosService("linux-systemd", strings.TrimSuffix(unit, ".service"))
	if err != nil {
		return err
	}
	action := s.Start
	if verb == "stop" {
		action = s.Stop
	}
	if err := action(); err != nil {
		return fmt.Errorf("%s %s: systemctl --user %s: %w%s", verb, unit, verb, err, systemdDiagnosis(unit))
	}
	return nil
}

func start(t target) error { return systemdControl(t, "start") }
func stop(t target) error  { return systemdControl(t, "stop") }

func status(t target) (StatusInfo, error) {
	f := systemdService(t)
	info := StatusInfo{Manager: "systemd --user", Name: unitName(t), Path: f.Path, State: StateUnknown}
	var err error
	if info.Installed, info.Current, err = readInstalled(f); err != nil {
		return info, err
	}
	if info.Enabled, err = lexists(systemdWantsLink(t)); err != nil {
		return info, err
	}
	if err := probeUserManager(); err != nil {
		info.Detail = err.Error()
		return info, nil
	}
	info.Reachable, info.Restarts = true, info.Installed
	out, err := systemctl("is-active", info.Name)
	switch word := strings.TrimSpace(out); word {
	case "active":
		info.State = StateRunning
	case "activating", "deactivating", "reloading", "refreshing":
		info.State, info.Detail = StateRunning, word
	case "inactive":
		info.State = StateStopped
	case "failed":
		info.State, info.Detail = StateStopped, fmt.Sprintf("failed (see `journalctl --user -u %s`)", info.Name)
	default:
		var ce *CommandError
		if errors.As(err, &ce) {
			info.Detail = ce.Error()
		} else {
			info.Detail = "systemctl --user is-active: " + word
		}
	}
	return info, nil
}

func installTray(t target) (Result, error) {
	if err := checkExecutable(t.exe); err != nil {
		return Result{}, err
	}
	if icon, ok := iconFile(t); ok {
		// The entry names it: it is there first.
		if _, err := installFile(icon, "the tray's icon"); err != nil {
			return Result{}, err
		}
	}
	return installFile(desktopEntry(t), "the tray's autostart entry")
}

func uninstallTray(t target) (Result, error) {
	r, err := uninstallFile(desktopPath(t), "the tray's autostart entry")
	if err == nil {
		_, _ = removeFile(iconPath(t))
	}
	return r, err
}

func trayInstalled(t target) (bool, error) { return lexists(desktopPath(t)) }
