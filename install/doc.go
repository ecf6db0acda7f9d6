// Package install registers tether's per-user, per-profile service with the
// operating system so that it starts at login, and registers the tray to
// start with the desktop session. It backs `tether service
// install|uninstall|start|stop|status [--print]` and the tray's "start at
// login" switch.
//
// It owns only the registration: the unit file, the LaunchAgent plist, the
// Run value, the autostart entry. It never runs the service itself (that is
// package service), so the command line and the tray can both use it.
//
// What is written, per platform:
//
//	Linux    systemd user unit  $XDG_CONFIG_HOME/systemd/user/tether[-PROFILE].service
//	         (Type=notify, ExecReload, Environment=PATH, TimeoutStopSec,
//	         WantedBy=default.target, KillMode=mixed, Delegate=yes,
//	         Restart=on-failure), enabled with `systemctl --user enable`
//	macOS    LaunchAgent        ~/Library/LaunchAgents/com.github.tether-dev.tether.service[.PROFILE].plist
//	         (RunAtLoad, KeepAlive, EnvironmentVariables PATH, ExitTimeOut)
//	Windows  Run value          HKCU\Software\Microsoft\Windows\CurrentVersion\Run\tether[-PROFILE]
//
// The PATH is the installing process's (Options.Path), the stop timeout
// the config's stop budget plus StopMargin (Options.StopTimeout); Installed
// reads both back, for `tether check`.
//
// And for the tray: $XDG_CONFIG_HOME/autostart/tether[-PROFILE].desktop
// (`tray --at-login`, TryExec, Icon= a PNG written to $XDG_DATA_HOME/tether,
// the panel-ordering hints), a LaunchAgent
// com.github.tether-dev.tether.tray[.PROFILE] with RunAtLoad and no
// KeepAlive (so Quit sticks), and the Run value tether.tray[-PROFILE].
// Service and tray names can never collide, whatever the profile is called.
// Disable makes the service not start at login without stopping it (the
// tray's switch off); Uninstall stops it where the OS can.
//
// Every file is rendered by portable code (Plan, PlanTrayAutostart), so
// `--print` shows exactly the bytes Install writes, on every platform and
// whether or not a service manager is reachable, and the macOS and Windows
// renderings are tested on Linux. Only the OS actions live in per-OS files.
//
// # API
//
// Plan and PlanTrayAutostart return the []File that Install and
// InstallTrayAutostart would write; Install, Uninstall and their tray
// twins return a Result (Changed=false when there was nothing to do, with
// a message saying so); Start, Stop and Status act on the installed
// service. Errors match ErrNoServiceManager (nothing was written) and
// ErrNotInstalled with errors.Is; failed systemctl calls are
// *CommandError values carrying systemctl's own words.
//
// # What kardianos/service does here, and what it does not
//
// github.com/kardianos/service is used for what it does well:
//
//   - starting and stopping the registered service: Start and Stop go
//     through kardianos's linux-systemd service with UserService set (that
//     is `systemctl --user start|stop`) and its darwin-launchd service
//     (`launchctl load|unload`), and macOS Status is kardianos's
//     `launchctl list` reading;
//   - knowing the service managers: on macOS its darwin-launchd system is
//     used as it is; on Linux its linux-systemd system is taken from
//     service.AvailableSystems once our own probe (below) has found a
//     user manager.
//
// It is not used to write or remove registrations, for reasons that are
// properties of kardianos v1.2.4, not of taste:
//
//   - Its systemd Install ignores $XDG_CONFIG_HOME (it always writes to
//     os.UserHomeDir()/.config/systemd/user), writes the unit in place
//     (a crash leaves a torn file), leaves the unit behind when
//     `systemctl enable` fails, and refuses to update an existing unit
//     ("Init already exists"); its Uninstall disables without stopping
//     (the service runs on with its unit gone) and fails when nothing is
//     installed. A half-written registration
//     is exactly what must not happen, so Install writes the unit itself
//     (atomically, rolled back on any later failure) and runs
//     `systemctl --user daemon-reload` and `enable` itself.
//   - Its unit template quotes arguments by escaping '"' only; a path with
//     '%', '$' or '\' would be mangled by systemd's specifier, variable and
//     C-escape expansion. Our renderer escapes all of them. The same
//     template, rendered by us, is what Plan returns, so --print cannot
//     drift from what is installed. Passing it as the SystemdScript option
//     would be pointless because kardianos's Install is never called.
//   - Its platform detection is not asked about Linux. It decides at init
//     time and accepts rpm-ostree on PATH as proof of systemd, yet never
//     asks whether a *user* manager answers; where systemd is not PID 1 it
//     picks "unix-systemv", whose Install would write a system-wide
//     /etc/init.d script. We require /run/systemd/system (what
//     sd_booted(3) checks) and a `systemctl --user` that reaches a user
//     manager, and otherwise return ErrNoServiceManager before anything is
//     written. When our probe succeeds we take kardianos's linux-systemd
//     System from service.AvailableSystems() directly, whatever it chose.
//   - Its systemd Status maps "failed" to an error and "deactivating" to
//     ErrNotInstalled, and its command runner drops systemctl's stderr, so
//     Linux Status asks `systemctl --user is-active` itself, and a failed
//     Start or Stop is followed by a `systemctl --user show` of the unit's
//     state so that the user sees why.
//   - Its darwin Install logs to the home directory and cannot be
//     previewed, so the plist is written by us, like the unit.
//   - On Windows it ignores UserService and would install a LocalSystem
//     service in session 0, which cannot show a tray, reach the user's
//     profile, or own the user's agents. Windows uses the per-user Run key
//     (golang.org/x/sys/windows/registry) and kardianos is not used at all.
//     Windows has no per-user service manager: Start launches the
//     registered command line detached, Stop returns ErrNoServiceManager
//     (ask the running service to quit through the local API), and Status
//     cannot say whether the service runs.
package install
