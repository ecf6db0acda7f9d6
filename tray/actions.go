package tray

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/assets"
	"github.com/tether-dev/tether/install"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/power"
)

// osDeps are the engine's ways into the real OS; n shows the notices.
func osDeps(n *desktopNotifier) deps {
	return deps{
		now:            time.Now,
		notify:         n.notify,
		noticeActions:  n.onAction,
		withdraw:       n.withdraw,
		open:           openPath,
		startService:   startService,
		loginInstalled: loginInstalled,
		setLogin:       setLogin,
		restartWindow:  restartWindow,
		serviceInstalled: func(o Options) bool {
			_, ok, err := install.Installed(installOptions(o))
			return ok && err == nil
		},
		configInit: configInit,
		copy:       copyToClipboard,
		watchSleep: power.WatchSleep,
	}
}

// The service says which config file it runs and whether --config named
// it (api.Status's ConfigPath and ConfigGiven, in every hello). The tray
// keeps the last it heard, also while the service is down, so that "Open
// config" opens the file the service uses and "Start service" starts it
// again with the same --config (and, as the tray's socket is the
// profile's, the same --profile), not the tray's own default.

// serviceConfig is the config the service last said it runs.
type serviceConfig struct {
	path  string // "" until a service has said
	given bool   // named with --config
}

// noteServiceLocked keeps the config st says the service runs. A service
// that does not say (an older one) changes nothing. e.mu is held.
func (e *engine) noteServiceLocked(st api.Status) {
	if st.ConfigPath != "" {
		e.svc = serviceConfig{path: st.ConfigPath, given: st.ConfigGiven}
	}
}

// serviceOptions are the tray's options for what acts on the service's
// config: Open config and Start service.
func (e *engine) serviceOptions() Options {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.opts.forService(e.svc)
}

// forService returns o with the config the service runs: its file, and
// its --config when it was given one. With nothing heard yet, o as the
// tray was started.
func (o Options) forService(sc serviceConfig) Options {
	if sc.path == "" {
		return o
	}
	o.ConfigFile, o.ConfigFlag = sc.path, ""
	if sc.given {
		o.ConfigFlag = sc.path
	}
	return o
}

func installOptions(o Options) install.Options {
	return install.Options{Profile: o.Profile, ConfigPath: o.ConfigFlag, Icon: assets.PNG(assets.Mark)}
}

// openPath opens path with the desktop's default application: xdg-open on
// Linux, open on macOS, the shell's file handler on Windows
// (through rundll32 rather than `cmd /c start`, whose command line would
// read & or ^ in a path as its own syntax). The opener is not waited for
// here: some wait for the application to close. A failure it reports
// later is logged with the tray's output.
func openPath(path string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", path)
	case "darwin":
		cmd = exec.Command("open", path)
	default:
		cmd = exec.Command("xdg-open", path)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Most openers answer within a moment; wait that long for a
	// failure worth showing (no application for the file type).
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s %s: %v %s", filepath.Base(cmd.Path), path, err, strings.TrimSpace(stderr.String()))
		}
	case <-time.After(2 * time.Second):
	}
	return nil
}

// startService starts the profile's service: the installed login service
// if there is one (so it runs under the service manager), else a
// `tether service run` of its own. That one is started in a session of its
// own with its output in o.ServiceLog: it is not the tray's to keep, and
// it outlives the tray. The tray only reaps it if it ends first.
func startService(o Options) (how string, exited <-chan error, err error) {
	managerErr := install.Start(installOptions(o))
	if managerErr == nil {
		return "the login service", nil, nil
	}
	if errors.Is(managerErr, install.ErrNotInstalled) || errors.Is(managerErr, install.ErrNoServiceManager) {
		managerErr = nil
	}
	// Not installed, or installed but the manager could not start it:
	// run one ourselves, so the user has agents meanwhile.
	exe, err := os.Executable()
	if err != nil {
		return "", nil, errors.Join(managerErr, fmt.Errorf("finding the tether executable: %w", err))
	}
	cmd := exec.Command(exe, append(o.globalFlags(), "service", "run")...)
	out, err := openServiceLog(o.ServiceLog)
	if err != nil {
		return "", nil, errors.Join(managerErr, err)
	}
	defer out.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return "", nil, errors.Join(managerErr, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err))
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	how = fmt.Sprintf("`tether service run` (pid %d)", cmd.Process.Pid)
	if managerErr != nil {
		how += fmt.Sprintf(", started because the login service did not start (%v),", managerErr)
	}
	return how, ch, nil
}

// openServiceLog opens the log of a service the tray starts, for
// appending; without a path, output goes nowhere.
func openServiceLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("the service's log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the service's log: %w", err)
	}
	logline.Printf(f, "tray", "starting the service")
	return f, nil
}

// loginInstalled: the switch is on when something starts the agents at
// login: the login service enabled, or the tray's autostart entry
// (install.StartsAtLogin), so that it shows what the next login does.
func loginInstalled(o Options) (bool, error) {
	return install.StartsAtLogin(installOptions(o))
}

// setLogin turns start at login on or off. On: the login service is
// installed as `tether service install --no-start` installs it (with the
// config's stop timeout and this session's PATH), where a service manager
// runs one, and the tray's autostart entry is written; the engine starts
// the service next, if it does not run. Off: the service no longer starts
// at login and the autostart entry is removed; nothing running stops.
func setLogin(o Options, on bool) error {
	inst := installOptions(o)
	if !on {
		_, err1 := install.UninstallTrayAutostart(inst)
		_, err2 := install.Disable(inst)
		if errors.Is(err2, install.ErrNoServiceManager) {
			err2 = nil
		}
		return errors.Join(err1, err2)
	}
	st, err := install.Status(inst)
	if err != nil && !errors.Is(err, install.ErrNoServiceManager) {
		return err
	}
	if st.Reachable {
		// The PATH the agents get was chosen by whoever installed the
		// service (from a shell); ticking the box must not swap in the
		// tray's own, which at login is the session's short one. Only a
		// first install takes the tray's.
		var env []string
		if s, ok, err := install.Installed(inst); err == nil && ok && s.Path != "" {
			env = []string{"PATH=" + s.Path}
		}
		if err := runTetherEnv(o, env, "service", "install", "--no-start"); err != nil {
			return fmt.Errorf("installing the login service: %w", err)
		}
	}
	if _, err := install.InstallTrayAutostart(inst); err != nil {
		if st.Reachable {
			if _, uerr := install.Disable(inst); uerr != nil {
				return errors.Join(fmt.Errorf("installing the tray's autostart entry: %w", err),
					fmt.Errorf("disabling the login service again: %w", uerr))
			}
		}
		return fmt.Errorf("installing the tray's autostart entry: %w", err)
	}
	return nil
}

// restartWindow is how long the service's manager takes to start it again
// after it died: install.RestartWindow where the installed service is
// restarted by its manager, zero otherwise.
func restartWindow(o Options) time.Duration {
	st, err := install.Status(installOptions(o))
	if err != nil || !st.Reachable || !st.Restarts || !st.Enabled {
		return 0
	}
	return install.RestartWindow
}

// runTether runs a tether command for the tray's profile and config.
func runTether(o Options, args ...string) error { return runTetherEnv(o, nil, args...) }

// runTetherEnv is runTether with env added to the tray's environment.
func runTetherEnv(o Options, env []string, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(o.globalFlags(), args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("tether %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// configInit runs `tether config init` for the tray's profile and config.
func configInit(o Options) error { return runTether(o, "config", "init") }
