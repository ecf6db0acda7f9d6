package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Errors of this package, matched with errors.Is.
var (
	// ErrNoServiceManager: the OS has no per-user service manager that can
	// be reached (Linux without systemd as init or without a reachable
	// `systemctl --user`; Windows for Start/Stop). Nothing was written.
	ErrNoServiceManager = errors.New("no per-user service manager is available")
	// ErrNotInstalled: Start or Stop was asked for a service that is not
	// installed.
	ErrNotInstalled = errors.New("the tether service is not installed")
)

// DefaultProfile is the profile used without --profile. It gets the plain
// names (tether.service, ...) and no --profile flag. It mirrors
// service.DefaultProfile, which this leaf cannot import.
const DefaultProfile = "default"

// profileRE mirrors service.ValidateProfile. A profile name becomes part of
// file names, unit names, launchd labels and registry value names, so it
// is checked here too.
var profileRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// Options say which tether, which profile and which config the
// registration runs, and (for tests) where home is.
type Options struct {
	// Executable is the tether binary to register; empty means
	// os.Executable(). A relative path is made absolute.
	Executable string
	// Profile is the --profile to run; empty means DefaultProfile.
	Profile string
	// ConfigPath is the --config to run, if any; made absolute.
	ConfigPath string
	// Home is the user's home directory; empty means os.UserHomeDir().
	Home string
	// Env, when not nil, is the whole environment the paths are resolved
	// from (XDG_CONFIG_HOME, XDG_DATA_HOME, PATH); nil means the process
	// environment.
	Env map[string]string
	// Path is the PATH the service, and so its agents, will run with;
	// empty means the installing process's own $PATH (a login service
	// manager's PATH is usually shorter than a shell's). It is written
	// into the unit or plist, and Plan shows it.
	Path string
	// StopTimeout is how long the service may take to stop every agent
	// (see StopBudget); the manager's stop timeout is set to it plus
	// StopMargin, and never below DefaultStopTimeout.
	StopTimeout time.Duration
	// Icon is the PNG the tray's autostart entry shows (Linux): written
	// beside it. None: no Icon= key.
	Icon []byte
}

// The manager's stop timeout: DefaultStopTimeout at least, and
// StopMargin beyond the service's own stop.
const (
	DefaultStopTimeout = 30 * time.Second
	StopMargin         = 10 * time.Second
)

// RestartDelay is how long the service manager waits before it starts a
// service that died again (RestartSec, ThrottleInterval).
const RestartDelay = 2 * time.Second

// RestartWindow is how long a service that died may take to answer again
// when its manager restarts it: RestartDelay, and the start itself.
const RestartWindow = RestartDelay + 8*time.Second

// File is one thing Install writes: a file, or on Windows a registry value
// (then Path is `HKCU\<key>\<value name>`, Content the value's string
// data and Mode 0).
type File struct {
	Path    string
	Content []byte
	Mode    os.FileMode
}

// IsRegistryValue reports whether f is a Windows registry value.
func (f File) IsRegistryValue() bool { return strings.HasPrefix(f.Path, `HKCU\`) }

// Result says what Install or Uninstall did.
type Result struct {
	// Changed is false when there was nothing to do: already installed as
	// planned, or nothing installed to remove.
	Changed bool
	// Paths are the files or registry values written or removed.
	Paths []string
	// Message is one line for the user.
	Message string
}

// State is whether the registered service is running.
type State string

// States of StatusInfo.State.
const (
	StateRunning State = "running"
	StateStopped State = "stopped"
	StateUnknown State = "unknown"
)

// StatusInfo describes the registration and the service's state.
type StatusInfo struct {
	Manager   string // "systemd --user", "launchd", "HKCU Run"
	Name      string // unit name, launchd label or Run value name
	Path      string // where the registration is (or would be)
	Installed bool
	// Current: what is installed is exactly what Install would write now
	// (false after the binary moved or the flags changed: reinstall).
	Current bool
	// Enabled: it starts at login (a disabled systemd unit is installed
	// and not enabled).
	Enabled bool
	// Reachable: a service manager that can run the service answers (on
	// Linux, a systemd user manager); without one, start at login is
	// the tray's autostart entry alone.
	Reachable bool
	// Restarts: the manager starts the service again when it dies
	// (systemd's Restart=, launchd's KeepAlive).
	Restarts bool
	State    State
	// Detail says why State is unknown, or adds the manager's own word
	// (for example "failed").
	Detail string
}

// Plan returns what Install would write, without touching anything. It
// works wherever Install could, and also where no service manager is
// reachable, so `tether service install --print` always answers.
func Plan(o Options) ([]File, error) {
	t, err := resolve(o)
	if err != nil {
		return nil, err
	}
	return planService(runtime.GOOS, t)
}

// Install registers the service to start at login. It is idempotent:
// installing again rewrites what changed and reports Changed=false when
// nothing did. It does not start the service now (Start does). On failure
// nothing it wrote is left behind; where no service manager is reachable
// it returns an error matching ErrNoServiceManager before writing
// anything.
func Install(o Options) (Result, error) {
	t, err := resolve(o)
	if err != nil {
		return Result{}, err
	}
	return install(t)
}

// Uninstall stops the service where the OS can, and removes what Install
// wrote. With nothing installed it returns Changed=false and a message
// saying so, and no error.
func Uninstall(o Options) (Result, error) {
	t, err := resolve(o)
	if err != nil {
		return Result{}, err
	}
	return uninstall(t)
}

// Start starts the installed service now through the OS (ErrNotInstalled
// when it is not installed).
func Start(o Options) error {
	t, err := resolve(o)
	if err != nil {
		return err
	}
	return start(t)
}

// Stop stops the running service through the OS. Stopping a stopped
// service is not an error.
func Stop(o Options) error {
	t, err := resolve(o)
	if err != nil {
		return err
	}
	return stop(t)
}

// Disable makes the service no longer start at login and stops nothing:
// a service that runs goes on running. The registration stays where the
// OS can keep it without starting it (the systemd unit, disabled), and
// Install enables it again. With nothing installed it returns
// Changed=false.
func Disable(o Options) (Result, error) {
	t, err := resolve(o)
	if err != nil {
		return Result{}, err
	}
	return disable(t)
}

// Settings are what an installed registration fixes for the service it
// starts, as Installed reads them back.
type Settings struct {
	// StopTimeout is the manager's stop timeout (systemd's
	// TimeoutStopSec, launchd's ExitTimeOut); zero when not set.
	StopTimeout time.Duration
	// Path is the PATH the service runs with; "" when not set (the
	// manager's own).
	Path string
}

// Installed reads the settings of the installed service registration;
// ok is false when none is installed.
func Installed(o Options) (s Settings, ok bool, err error) {
	t, err := resolve(o)
	if err != nil {
		return Settings{}, false, err
	}
	return installedSettings(t)
}

// Status reports whether the service is installed, whether the
// installation is current, and whether it runs. An unreachable service
// manager is not an error: State is then StateUnknown and Detail says why.
func Status(o Options) (StatusInfo, error) {
	t, err := resolve(o)
	if err != nil {
		return StatusInfo{}, err
	}
	return status(t)
}

// PlanTrayAutostart returns what InstallTrayAutostart would write,
// without touching anything.
func PlanTrayAutostart(o Options) ([]File, error) {
	t, err := resolve(o)
	if err != nil {
		return nil, err
	}
	return planTray(runtime.GOOS, t)
}

// InstallTrayAutostart makes the desktop session start `tether tray` at
// login. It needs no service manager and does not start the tray now.
func InstallTrayAutostart(o Options) (Result, error) {
	t, err := resolve(o)
	if err != nil {
		return Result{}, err
	}
	return installTray(t)
}

// UninstallTrayAutostart removes the tray's autostart entry. It never
// stops a running tray (on macOS it deliberately does not unload the
// LaunchAgent, which would kill the tray that was started by it).
func UninstallTrayAutostart(o Options) (Result, error) {
	t, err := resolve(o)
	if err != nil {
		return Result{}, err
	}
	return uninstallTray(t)
}

// TrayAutostartInstalled reports whether the tray's autostart entry exists.
func TrayAutostartInstalled(o Options) (bool, error) {
	t, err := resolve(o)
	if err != nil {
		return false, err
	}
	return trayInstalled(t)
}

// StartsAtLogin reports whether something makes the profile's agents
// start at the next login: the login service, enabled with the OS's
// service manager (by `service install` or the tray's switch), or the
// tray's autostart entry (whose tray starts a missing service). It is
// what the tray's "Start at login" shows.
func StartsAtLogin(o Options) (bool, error) {
	st, err := Status(o)
	if err != nil && !errors.Is(err, ErrNoServiceManager) {
		return false, err
	}
	if st.Enabled {
		return true, nil
	}
	return TrayAutostartInstalled(o)
}

// target is a resolved Options: what the renderers need, with every path
// absolute and the profile normalised.
type target struct {
	exe         string
	profile     string // "" for DefaultProfile
	config      string // absolute, or ""
	home        string // "" where no home is needed (Windows)
	getenv      func(string) string
	path        string        // the PATH the service runs with
	stopTimeout time.Duration // the manager's stop timeout
	icon        []byte
	// packaged: the service is the unit a Linux package installed
	// (PackagedUnitPath), run by the packaged binary: Install enables
	// it and writes only this user's drop-in.
	packaged bool
}

func resolve(o Options) (target, error) {
	t := target{getenv: os.Getenv}
	if o.Env != nil {
		t.getenv = func(k string) string { return o.Env[k] }
	}
	switch o.Profile {
	case "", DefaultProfile:
	default:
		if !profileRE().MatchString(o.Profile) {
			return target{}, fmt.Errorf("profile %q: must match %s", o.Profile, profileRE())
		}
		t.profile = o.Profile
	}
	exe := o.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return target{}, fmt.Errorf("finding the tether executable: %w", err)
		}
	}
	var err error
	if t.exe, err = filepath.Abs(exe); err != nil {
		return target{}, fmt.Errorf("executable %q: %w", exe, err)
	}
	if o.ConfigPath != "" {
		if t.config, err = filepath.Abs(o.ConfigPath); err != nil {
			return target{}, fmt.Errorf("config %q: %w", o.ConfigPath, err)
		}
	}
	t.path = o.Path
	if t.path == "" {
		t.path = t.getenv("PATH")
	}
	// Whole seconds, up: every manager reads them.
	t.stopTimeout = (max(DefaultStopTimeout, o.StopTimeout+StopMargin) + time.Second - 1).Truncate(time.Second)
	t.icon = o.Icon
	t.home = o.Home
	if t.home == "" && runtime.GOOS != "windows" {
		if t.home, err = os.UserHomeDir(); err != nil {
			return target{}, fmt.Errorf("finding the home directory: %w", err)
		}
	}
	if t.home != "" && !filepath.IsAbs(t.home) {
		return target{}, fmt.Errorf("home directory %q is not absolute", t.home)
	}
	if runtime.GOOS == "windows" && strings.ContainsRune(t.exe, '"') {
		// A Windows command line cannot quote a program name containing '"'
		// (and no Windows file name contains one).
		return target{}, fmt.Errorf("executable %q: contains '\"'", t.exe)
	}
	for _, p := range []string{t.exe, t.config, t.home, t.path} {
		if err := checkPathText(p); err != nil {
			return target{}, err
		}
	}
	t.packaged = runtime.GOOS == "linux" && usesPackagedUnit(t)
	return t, nil
}

// The packaged unit and binary, variables so that tests can stand in
// their own.
var (
	packagedUnitPath   = PackagedUnitPath
	packagedExecutable = PackagedExecutable
)

// usesPackagedUnit reports whether the service of t is the packaged
// unit: the default profile's, run by the packaged binary, and the
// package is installed.
func usesPackagedUnit(t target) bool {
	if t.profile != "" {
		return false
	}
	unit, err := os.Stat(packagedUnitPath)
	if err != nil || !unit.Mode().IsRegular() {
		return false
	}
	exe, err1 := os.Stat(t.exe)
	packaged, err2 := os.Stat(packagedExecutable)
	return err1 == nil && err2 == nil && os.SameFile(exe, packaged)
}

// checkPathText rejects paths that no unit, plist, desktop entry or
// command line can carry faithfully.
func checkPathText(p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("path %q is not valid UTF-8", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("path %q contains a control character", p)
		}
	}
	return nil
}

// args is the command line that runs sub (e.g. "service", "run") for t.
func (t target) args(sub ...string) []string {
	argv := []string{t.exe}
	if t.profile != "" {
		argv = append(argv, "--profile", t.profile)
	}
	if t.config != "" {
		argv = append(argv, "--config", t.config)
	}
	return append(argv, sub...)
}

// profileName is the profile as the user knows it.
func (t target) profileName() string {
	if t.profile == "" {
		return DefaultProfile
	}
	return t.profile
}

// suffix is "" for the default profile and sep+profile otherwise.
func (t target) suffix(sep string) string {
	if t.profile == "" {
		return ""
	}
	return sep + t.profile
}

// xdgDataHome follows the XDG base directory spec: a relative
// $XDG_DATA_HOME is ignored.
func (t target) xdgDataHome() string {
	if d := t.getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(t.home, ".local", "share")
}

// xdgConfigHome follows the XDG base directory spec: a relative
// $XDG_CONFIG_HOME is ignored.
func (t target) xdgConfigHome() string {
	if d := t.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(t.home, ".config")
}

func planService(goos string, t target) ([]File, error) {
	switch goos {
	case "linux":
		return []File{systemdService(t)}, nil
	case "darwin":
		return []File{launchdServicePlist(t)}, nil
	case "windows":
		return []File{runValue(serviceRunName(t), t.args("service", "run"))}, nil
	}
	return nil, fmt.Errorf("%w: tether has no login service for %s", ErrNoServiceManager, goos)
}

func planTray(goos string, t target) ([]File, error) {
	switch goos {
	case "linux":
		if f, ok := iconFile(t); ok {
			return []File{desktopEntry(t), f}, nil
		}
		return []File{desktopEntry(t)}, nil
	case "darwin":
		return []File{launchdTrayPlist(t)}, nil
	case "windows":
		return []File{runValue(trayRunName(t), t.args("tray", "--at-login"))}, nil
	}
	return nil, fmt.Errorf("%w: tether has no tray autostart for %s", ErrNoServiceManager, goos)
}
