package install

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// This file renders every registration on every platform. It reads and
// writes nothing, so Plan can show exactly what Install writes and tests
// can check the macOS and Windows forms on Linux.

const (
	header      = "# Written by `tether service install`; `tether service uninstall` removes it.\n"
	trayComment = "Written by tether; turn \"Start at login\" off in the tray to remove it."
)

// ---- systemd (Linux) ----

func unitName(t target) string { return "tether" + t.suffix("-") + ".service" }

func unitPath(t target) string { return filepath.Join(systemdUnitDir(t), unitName(t)) }

func systemdUnitDir(t target) string {
	return filepath.Join(t.xdgConfigHome(), "systemd", "user")
}

// systemdTemplate is the unit: its header, the profile, the command, the
// environment (with its comment), RestartSec and TimeoutStopSec.
// kardianos's default template cannot serve: it has
// WantedBy=multi-user.target (a target a user manager never reaches, so
// the service would never start at login), no KillMode, no Delegate, and
// RestartSec=120.
const systemdTemplate = `%s[Unit]
Description=tether agent supervisor (profile %s)
Documentation=https://github.com/tether-dev/tether

[Service]
# The service says READY=1 once its socket listens, so a start returns
# when it answers; RELOADING=1 and READY=1 around a reload, STOPPING=1 as
# it stops.
Type=notify
NotifyAccess=main
ExecStart=%s
ExecReload=/bin/kill -HUP $MAINPID
%s
# A crashed service comes back quickly: its guardians have already torn
# their agents down, and the intent to run them survives in the state file.
Restart=on-failure
RestartSec=%d
# SIGTERM goes to the service alone, which stops its guardians and with
# them every agent tree, in order; whatever is left when the stop times
# out is killed. The timeout covers the longest stop the config asks for.
KillMode=mixed
TimeoutStopSec=%d
# Guardians may give each agent its own cgroup below the service's.
Delegate=yes

[Install]
WantedBy=default.target
`

// userPathComment heads the Environment= line of a unit that `tether
// service install` writes.
const userPathComment = `# The PATH of the shell that installed it, which the agents inherit: a
# user manager's own is shorter (run tether service install again to
# change it).`

func systemdUnit(t target) File {
	return File{
		Path: unitPath(t),
		Content: fmt.Appendf(nil, systemdTemplate, header, t.profileName(), systemdCommand(t.args("service", "run")),
			userPathComment+"\nEnvironment="+systemdQuote("PATH="+t.path), int(RestartDelay.Seconds()), int(t.stopTimeout.Seconds())),
		Mode: 0o644,
	}
}

// dropInPath is where a user's settings of the packaged unit go.
func dropInPath(t target) string {
	return filepath.Join(systemdUnitDir(t), unitName(t)+".d", "tether.conf")
}

// systemdDropIn is a user's settings of the packaged unit: the PATH of
// the shell that installed it, the stop timeout the config asks for, and
// the command line when it differs from the packaged one (a --config).
func systemdDropIn(t target) File {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# This user's settings of " + PackagedUnitPath + ".\n")
	b.WriteString("[Service]\n")
	if argv := t.args("service", "run"); len(argv) != 3 {
		b.WriteString("ExecStart=\nExecStart=" + systemdCommand(argv) + "\n")
	}
	b.WriteString(userPathComment + "\n")
	b.WriteString("Environment=" + systemdQuote("PATH="+t.path) + "\n")
	fmt.Fprintf(&b, "TimeoutStopSec=%d\n", int(t.stopTimeout.Seconds()))
	return File{Path: dropInPath(t), Content: []byte(b.String()), Mode: 0o644}
}

// systemdService is what Install writes for the service: this user's
// drop-in of the packaged unit, or a unit of its own.
func systemdService(t target) File {
	if t.packaged {
		return systemdDropIn(t)
	}
	return systemdUnit(t)
}

// systemdCommand is argv as the value of ExecStart=.
func systemdCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = systemdQuote(a)
	}
	return strings.Join(words, " ")
}

// PackagedUnitPath is where the Linux packages put the service's unit,
// for every user's systemd user manager (not enabled: `tether service
// install` enables it for a user).
const PackagedUnitPath = "/usr/lib/systemd/user/tether.service"

// PackagedExecutable is the tether the Linux packages install.
const PackagedExecutable = "/usr/bin/tether"

// PackagedUnit is the unit the Linux packages install at
// PackagedUnitPath: the default profile's service, run by
// PackagedExecutable. Each user's own PATH, stop timeout and command line
// go into a drop-in beside it when `tether service install` enables it.
func PackagedUnit() []byte {
	t := target{exe: PackagedExecutable, stopTimeout: DefaultStopTimeout}
	return fmt.Appendf(nil, systemdTemplate, packagedHeader, t.profileName(), systemdCommand(t.args("service", "run")),
		packagedPathComment+"\nEnvironment=PATH=/usr/local/bin:/usr/bin:/bin", int(RestartDelay.Seconds()), int(t.stopTimeout.Seconds()))
}

const packagedHeader = "# Installed by the tether package, not enabled: `tether service install`\n" +
	"# enables it for a user, with that user's settings in a drop-in\n" +
	"# (~/.config/systemd/user/tether.service.d/).\n"

const packagedPathComment = `# The agents inherit the service's PATH: the drop-in of ` + "`tether service\n" +
	"# install`" + ` sets the PATH of the shell that ran it.`

// systemdQuote makes s one word of an ExecStart= line (systemd.syntax(7)
// "Quoting", systemd.service(5) "Command lines"): safe words stay bare;
// anything else is double-quoted with '\' and '"' C-escaped, and '%'
// (specifiers) and '$' (variable expansion) doubled, inside or outside
// quotes.
func systemdQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@+=:,./-") == "" {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '%':
			b.WriteString("%%")
		case '$':
			b.WriteString("$$")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ---- XDG autostart (Linux tray) ----

func desktopPath(t target) string {
	return filepath.Join(t.xdgConfigHome(), "autostart", "tether"+t.suffix("-")+".desktop")
}

// iconPath is where the autostart entry's icon is written: the data
// directory, since an absolute Icon= needs no icon theme.
func iconPath(t target) string { return filepath.Join(t.xdgDataHome(), "tether", "tether.png") }

func iconFile(t target) (File, bool) {
	if len(t.icon) == 0 {
		return File{}, false
	}
	return File{Path: iconPath(t), Content: t.icon, Mode: 0o644}, true
}

// desktopEntry starts the tray at login with --at-login: a tray that
// finds no service then starts one, which is how the agents start at
// login where no service manager can. TryExec makes the desktop skip the
// entry once the binary is gone. The tray must come after the panel
// whose tray it joins (it waits for one all the same):
// X-KDE-autostart-after=panel says so to KDE; GNOME's
// X-GNOME-Autostart-Phase is left out, because systemd's XDG autostart
// generator (the autostart of KDE Plasma's systemd startup, sway and
// other systemd sessions) skips every entry that has it, and the other
// environments start autostart entries after their panel anyway.
func desktopEntry(t target) File {
	argv := t.args("tray", "--at-login")
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = desktopExecArg(a)
	}
	name := "tether"
	if t.profile != "" {
		name += " (" + t.profile + ")"
	}
	var b strings.Builder
	b.WriteString("# " + trayComment + "\n")
	b.WriteString("[Desktop Entry]\n")
	b.WriteString("Type=Application\n")
	b.WriteString("Name=" + name + "\n")
	b.WriteString("Comment=Agent status and controls in the system tray\n")
	b.WriteString("Exec=" + strings.Join(words, " ") + "\n")
	b.WriteString("TryExec=" + desktopString(t.exe) + "\n")
	if len(t.icon) > 0 {
		b.WriteString("Icon=" + desktopString(iconPath(t)) + "\n")
	}
	b.WriteString("Terminal=false\n")
	b.WriteString("X-GNOME-Autostart-enabled=true\n")
	b.WriteString("X-KDE-autostart-after=panel\n")
	return File{Path: desktopPath(t), Content: []byte(b.String()), Mode: 0o644}
}

// desktopString escapes a string value of a desktop entry (Desktop Entry
// Specification, "Possible value types"): '\' as \\.
func desktopString(s string) string { return strings.ReplaceAll(s, `\`, `\\`) }

// desktopExecArg makes s one argument of an Exec= key (Desktop Entry
// Specification, "The Exec key"): an argument with a reserved character
// is double-quoted with '"', '`', '$' and '\' backslash-escaped; '%' is
// doubled (field codes); and then, because Exec is a string value whose
// own escapes are undone first, every '\' is doubled again.
func desktopExecArg(s string) string {
	q := s
	if s == "" || strings.ContainsAny(s, " \t\n\"'\\><~|&;$*?#()`") {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range s {
			if strings.ContainsRune("\"`$\\", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
		q = b.String()
	}
	q = strings.ReplaceAll(q, "%", "%%")
	return strings.ReplaceAll(q, `\`, `\\`)
}

// ---- launchd (macOS) ----

const labelPrefix = "com.github.tether-dev.tether."

// launchdLabel is the job label and the plist's base name. Service and
// tray labels differ in a fixed segment, so no profile name can make them
// collide.
func launchdLabel(kind string, t target) string { return labelPrefix + kind + t.suffix(".") }

func launchAgentPath(t target, label string) string {
	return filepath.Join(t.home, "Library", "LaunchAgents", label+".plist")
}

// launchdServicePlist keeps the service alive (KeepAlive, restarted after
// ThrottleInterval, the RestartSec of launchd) and starts it at login.
// Its stderr, where the service logs, goes to ~/Library/Logs.
func launchdServicePlist(t target) File {
	label := launchdLabel("service", t)
	logPath := filepath.Join(t.home, "Library", "Logs", "tether"+t.suffix("-")+".log")
	var p plist
	p.start("Written by `tether service install`; `tether service uninstall` removes it.")
	p.key("Label").str(label)
	p.key("ProgramArguments").strs(t.args("service", "run"))
	p.key("EnvironmentVariables").dict(map[string]string{"PATH": t.path})
	p.key("RunAtLoad").boolean(true)
	p.key("KeepAlive").boolean(true)
	p.key("ThrottleInterval").integer(int(RestartDelay.Seconds()))
	// How long launchd waits after SIGTERM before SIGKILL: the longest
	// stop the config asks for.
	p.key("ExitTimeOut").integer(int(t.stopTimeout.Seconds()))
	p.key("StandardOutPath").str(logPath)
	p.key("StandardErrorPath").str(logPath)
	return File{Path: launchAgentPath(t, label), Content: p.end(), Mode: 0o644}
}

// launchdTrayPlist starts the tray at login in the GUI session only, and
// has no KeepAlive: when the user quits the tray it stays quit.
func launchdTrayPlist(t target) File {
	label := launchdLabel("tray", t)
	var p plist
	p.start(trayComment)
	p.key("Label").str(label)
	p.key("ProgramArguments").strs(t.args("tray", "--at-login"))
	p.key("RunAtLoad").boolean(true)
	p.key("LimitLoadToSessionType").str("Aqua")
	p.key("ProcessType").str("Interactive")
	return File{Path: launchAgentPath(t, label), Content: p.end(), Mode: 0o644}
}

// plist writes an XML property list with one top-level dict.
type plist struct{ b strings.Builder }

func (p *plist) start(comment string) {
	p.b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- ` + comment + ` -->
<plist version="1.0">
<dict>
`)
}

func (p *plist) end() []byte {
	p.b.WriteString("</dict>\n</plist>\n")
	return []byte(p.b.String())
}

// text escapes the three characters element text needs escaped, with the
// named entities every plist reader knows. (resolve has already refused
// control characters, which XML 1.0 cannot carry.)
func (p *plist) text(s string) {
	p.b.WriteString(xmlText.Replace(s))
}

var xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func (p *plist) key(k string) *plist {
	p.b.WriteString("\t<key>")
	p.text(k)
	p.b.WriteString("</key>\n")
	return p
}

func (p *plist) str(v string) {
	p.b.WriteString("\t<string>")
	p.text(v)
	p.b.WriteString("</string>\n")
}

func (p *plist) strs(vs []string) {
	p.b.WriteString("\t<array>\n")
	for _, v := range vs {
		p.b.WriteString("\t\t<string>")
		p.text(v)
		p.b.WriteString("</string>\n")
	}
	p.b.WriteString("\t</array>\n")
}

func (p *plist) dict(m map[string]string) {
	p.b.WriteString("\t<dict>\n")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p.b.WriteString("\t\t<key>")
		p.text(k)
		p.b.WriteString("</key>\n\t\t<string>")
		p.text(m[k])
		p.b.WriteString("</string>\n")
	}
	p.b.WriteString("\t</dict>\n")
}

func (p *plist) boolean(v bool) {
	if v {
		p.b.WriteString("\t<true/>\n")
	} else {
		p.b.WriteString("\t<false/>\n")
	}
}

func (p *plist) integer(v int) { fmt.Fprintf(&p.b, "\t<integer>%d</integer>\n", v) }

// ---- HKCU Run (Windows) ----

const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

// Run value names: service values are "tether" or "tether-PROFILE", tray
// values "tether.tray" or "tether.tray-PROFILE"; the sixth character
// ('-' or '.') keeps the two sets apart whatever the profile is called.
func serviceRunName(t target) string { return "tether" + t.suffix("-") }
func trayRunName(t target) string    { return "tether.tray" + t.suffix("-") }

func runValuePath(name string) string { return `HKCU\` + runKey + `\` + name }

func runValue(name string, argv []string) File {
	return File{Path: runValuePath(name), Content: []byte(windowsCommandLine(argv))}
}

// windowsCommandLine joins argv the way CommandLineToArgvW and the C
// runtime split it. The program name is always quoted (Windows paths
// cannot contain '"', and its parsing knows no escapes).
func windowsCommandLine(argv []string) string {
	var b strings.Builder
	b.WriteString(`"` + argv[0] + `"`)
	for _, a := range argv[1:] {
		b.WriteByte(' ')
		b.WriteString(windowsEscapeArg(a))
	}
	return b.String()
}

// windowsEscapeArg is syscall.EscapeArg, which exists only on Windows:
// backslashes are literal except before '"', where they are doubled.
func windowsEscapeArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\"\\") {
		return s
	}
	quote := strings.ContainsAny(s, " \t")
	var b strings.Builder
	if quote {
		b.WriteByte('"')
	}
	slashes := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(s[i])
	}
	if quote {
		b.WriteString(strings.Repeat(`\`, slashes))
		b.WriteByte('"')
	}
	return b.String()
}
