package install

import (
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testdir"
)

// Paths that need every kind of quoting: spaces, quotes, backslashes,
// systemd specifiers and variables, desktop-entry field codes, XML
// specials.
const (
	weirdExe    = `/opt/my apps/te"ther's $HOME %h \n & <x>/tether`
	weirdConfig = `/home/u/My Config/agents 100%.yaml`
)

func testTarget(home, profile string) target {
	return target{
		exe:     "/opt/tether/bin/tether",
		profile: profile,
		home:    home,
		getenv:  func(string) string { return "" },
	}
}

func lines(b []byte) []string { return strings.Split(string(b), "\n") }

func requireLines(t *testing.T, content []byte, want ...string) {
	t.Helper()
	got := lines(content)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing line %q in:\n%s", w, content)
		}
	}
}

// keyValue returns the value of the first "key=" line.
func keyValue(t *testing.T, content []byte, key string) string {
	t.Helper()
	for _, l := range lines(content) {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= line in:\n%s", key, content)
	return ""
}

func TestSystemdUnit(t *testing.T) {
	home := testdir.Temp(t)
	tg := testTarget(home, "")
	f := systemdUnit(tg)
	if want := filepath.Join(home, ".config", "systemd", "user", "tether.service"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	if f.Mode != 0o644 {
		t.Errorf("mode %v", f.Mode)
	}
	requireLines(t, f.Content,
		"[Unit]",
		"Description=tether agent supervisor (profile default)",
		"[Service]",
		"ExecStart=/opt/tether/bin/tether service run",
		"Restart=on-failure",
		"RestartSec=2",
		"KillMode=mixed",
		"Delegate=yes",
		"[Install]",
		"WantedBy=default.target",
	)

	xdg := filepath.Join(home, "xdg config")
	tg = testTarget(home, "work")
	tg.config = "/etc/tether/work.yaml"
	tg.getenv = func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return xdg
		}
		return ""
	}
	f = systemdUnit(tg)
	if want := filepath.Join(xdg, "systemd", "user", "tether-work.service"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	requireLines(t, f.Content,
		"Description=tether agent supervisor (profile work)",
		"ExecStart=/opt/tether/bin/tether --profile work --config /etc/tether/work.yaml service run",
	)

	// A relative XDG_CONFIG_HOME is ignored, as the spec says.
	tg.getenv = func(string) string { return "relative/dir" }
	if f := systemdUnit(tg); !strings.HasPrefix(f.Path, filepath.Join(home, ".config")+string(filepath.Separator)) {
		t.Errorf("relative XDG_CONFIG_HOME used: %s", f.Path)
	}
}

func TestSystemdQuoting(t *testing.T) {
	tg := testTarget(testdir.Temp(t), "p.1")
	tg.exe, tg.config = weirdExe, weirdConfig
	exec := keyValue(t, systemdUnit(tg).Content, "ExecStart")
	want := []string{weirdExe, "--profile", "p.1", "--config", weirdConfig, "service", "run"}
	if got := parseSystemdExec(t, exec); !slices.Equal(got, want) {
		t.Errorf("ExecStart=%s\nparses as %q\nwant      %q", exec, got, want)
	}
	if got := systemdQuote("/usr/bin/tether"); got != "/usr/bin/tether" {
		t.Errorf("plain path quoted: %s", got)
	}
	if got := systemdQuote("/opt/my apps/tether"); got != `"/opt/my apps/tether"` {
		t.Errorf("path with a space: %s", got)
	}
}

// parseSystemdExec undoes systemd's specifier expansion (%%), quoting
// with C escapes (systemd.syntax(7)) and $$ on an ExecStart= value, and
// fails on anything our renderer must never produce.
func parseSystemdExec(t *testing.T, line string) []string {
	t.Helper()
	if strings.Contains(strings.ReplaceAll(line, "%%", ""), "%") {
		t.Fatalf("unescaped specifier in %q", line)
	}
	line = strings.ReplaceAll(line, "%%", "%")
	var words []string
	var w strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\':
			i++
			if i == len(line) || (line[i] != '\\' && line[i] != '"') {
				t.Fatalf("unexpected escape in %q", line)
			}
			w.WriteByte(line[i])
		case inQuote && c == '"':
			inQuote = false
		case inQuote:
			w.WriteByte(c)
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '"':
			inQuote, inWord = true, true
		case c == '\\' || c == '\'' || c == '$' && !strings.HasPrefix(line[i:], "$$"):
			t.Fatalf("unquoted %q in %q", c, line)
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inQuote {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	for i, w := range words {
		if strings.Contains(strings.ReplaceAll(w, "$$", ""), "$") {
			t.Fatalf("unescaped $ in word %q", w)
		}
		words[i] = strings.ReplaceAll(w, "$$", "$")
	}
	return words
}

func TestDesktopEntry(t *testing.T) {
	home := testdir.Temp(t)
	f := desktopEntry(testTarget(home, ""))
	if want := filepath.Join(home, ".config", "autostart", "tether.desktop"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	requireLines(t, f.Content,
		"[Desktop Entry]",
		"Type=Application",
		"Name=tether",
		"Exec=/opt/tether/bin/tether tray --at-login",
		"TryExec=/opt/tether/bin/tether",
		"Terminal=false",
		"X-GNOME-Autostart-enabled=true",
		"X-KDE-autostart-after=panel",
	)
	if strings.Contains(string(f.Content), "Icon=") {
		t.Errorf("an Icon= without an icon:\n%s", f.Content)
	}
	// systemd's XDG autostart generator skips an entry with a phase.
	if strings.Contains(string(f.Content), "X-GNOME-Autostart-Phase") {
		t.Errorf("a startup phase, which systemd-xdg-autostart-generator refuses:\n%s", f.Content)
	}
	// The tray starts in every desktop's session: no OnlyShowIn or
	// NotShowIn, which the generator's unit checks at start against
	// XDG_CURRENT_DESKTOP.
	for _, key := range []string{"OnlyShowIn", "NotShowIn"} {
		if strings.Contains(string(f.Content), key) {
			t.Errorf("%s, which keeps the tray from starting in some sessions:\n%s", key, f.Content)
		}
	}
	if l := lines(f.Content); !slices.Contains(l, "[Desktop Entry]") || slices.Index(l, "[Desktop Entry]") > slices.IndexFunc(l, func(s string) bool { return strings.HasPrefix(s, "Exec=") }) {
		t.Error("Exec is not in the [Desktop Entry] group")
	}

	tg := testTarget(home, "work")
	tg.exe, tg.config = weirdExe, weirdConfig
	f = desktopEntry(tg)
	if want := filepath.Join(home, ".config", "autostart", "tether-work.desktop"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	requireLines(t, f.Content, "Name=tether (work)")
	exec := keyValue(t, f.Content, "Exec")
	want := []string{weirdExe, "--profile", "work", "--config", weirdConfig, "tray", "--at-login"}
	if got := parseDesktopExec(t, exec); !slices.Equal(got, want) {
		t.Errorf("Exec=%s\nparses as %q\nwant      %q", exec, got, want)
	}

	// With an icon: written in the data directory, named by Icon=.
	tg = testTarget(home, "")
	tg.icon = []byte("\x89PNG")
	files, err := planTray("linux", tg)
	if err != nil || len(files) != 2 {
		t.Fatalf("planTray = %v, %v; want the entry and its icon", files, err)
	}
	icon := filepath.Join(home, ".local", "share", "tether", "tether.png")
	if files[1].Path != icon || string(files[1].Content) != "\x89PNG" {
		t.Errorf("icon file %s %q, want %s", files[1].Path, files[1].Content, icon)
	}
	requireLines(t, files[0].Content, "Icon="+desktopString(icon))
}

// The unit is Type=notify, reloads with SIGHUP, runs with the PATH it was
// given and stops within the stop budget plus the margin; the plist has
// the same PATH and stop timeout; Installed reads both back.
func TestServiceSettings(t *testing.T) {
	home := testdir.Temp(t)
	tg := testTarget(home, "")
	tg.path = `/home/u/.local/bin:/opt/we"ird $x 100%:/usr/bin`
	tg.stopTimeout = 95 * time.Second
	unit := systemdUnit(tg).Content
	requireLines(t, unit,
		"Type=notify",
		"NotifyAccess=main",
		"ExecReload=/bin/kill -HUP $MAINPID",
		"TimeoutStopSec=95",
	)
	if got := parseSystemdExec(t, keyValue(t, unit, "Environment")); len(got) != 1 || got[0] != "PATH="+tg.path {
		t.Errorf("Environment=%s parses as %q", keyValue(t, unit, "Environment"), got)
	}
	if s := unitSettings(unit); s.StopTimeout != 95*time.Second || s.Path != tg.path {
		t.Errorf("read back from the unit: %+v", s)
	}
	plist := launchdServicePlist(tg).Content
	p := readPlist(t, plist)
	if p["ExitTimeOut"] != "95" || p["EnvironmentVariables.PATH"] != tg.path {
		t.Errorf("plist ExitTimeOut %v, PATH %v", p["ExitTimeOut"], p["EnvironmentVariables.PATH"])
	}
	if s := plistSettings(plist); s.StopTimeout != 95*time.Second || s.Path != tg.path {
		t.Errorf("read back from the plist: %+v", s)
	}
	// resolve: the budget plus the margin, whole seconds up, never below
	// the default.
	for _, c := range []struct{ budget, want time.Duration }{
		{0, DefaultStopTimeout},
		{5 * time.Second, DefaultStopTimeout},
		{84500 * time.Millisecond, 95 * time.Second},
	} {
		r, err := resolve(Options{Executable: "/opt/tether", Home: home, StopTimeout: c.budget, Env: map[string]string{"PATH": "/bin"}})
		if err != nil || r.stopTimeout != c.want || r.path != "/bin" {
			t.Errorf("budget %v: stop timeout %v, path %q (%v), want %v", c.budget, r.stopTimeout, r.path, err, c.want)
		}
	}
}

// parseDesktopExec reads an Exec value as the Desktop Entry
// Specification says: string escapes first, then quoting, then field
// codes.
func parseDesktopExec(t *testing.T, v string) []string {
	t.Helper()
	var s strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			s.WriteByte(v[i])
			continue
		}
		i++
		if i == len(v) {
			t.Fatalf("trailing backslash in %q", v)
		}
		switch v[i] {
		case '\\':
			s.WriteByte('\\')
		case 's':
			s.WriteByte(' ')
		default:
			t.Fatalf("unexpected string escape \\%c in %q", v[i], v)
		}
	}
	line := s.String()
	var words []string
	var w strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\\':
			i++
			if i == len(line) || !strings.ContainsRune("\"`$\\", rune(line[i])) {
				t.Fatalf("bad quoted escape in %q", line)
			}
			w.WriteByte(line[i])
		case inQuote && c == '"':
			inQuote = false
		case inQuote:
			w.WriteByte(c)
		case c == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '"':
			inQuote, inWord = true, true
		case strings.ContainsRune("\t\n'\\><~|&;$*?#()`", rune(c)):
			t.Fatalf("reserved %q outside quotes in %q", c, line)
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	if inQuote {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	for i, w := range words {
		if strings.Contains(strings.ReplaceAll(w, "%%", ""), "%") {
			t.Fatalf("field code in %q", w)
		}
		words[i] = strings.ReplaceAll(w, "%%", "%")
	}
	return words
}

// readPlist parses a property list with encoding/xml and returns its
// top-level dict: strings, bools, integers (as strings) and string arrays.
func readPlist(t *testing.T, content []byte) map[string]any {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(content)))
	var path []string
	out := map[string]any{}
	var key, text string
	var arr []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not valid XML: %v\n%s", err, content)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			path = append(path, tok.Name.Local)
			text = ""
			if strings.Join(path, "/") == "plist/dict/array" {
				arr = []string{}
			}
		case xml.CharData:
			text += string(tok)
		case xml.EndElement:
			switch p := strings.Join(path, "/"); p {
			case "plist/dict/key":
				if _, dup := out[text]; dup {
					t.Errorf("duplicate key %s", text)
				}
				key = text
			case "plist/dict/string", "plist/dict/integer":
				out[key] = text
			case "plist/dict/true", "plist/dict/false":
				out[key] = tok.Name.Local == "true"
			case "plist/dict/array/string":
				arr = append(arr, text)
			case "plist/dict/array":
				out[key] = arr
			case "plist/dict/dict/key":
				key = key + "." + text
			case "plist/dict/dict/string":
				out[key] = text
				key = strings.Split(key, ".")[0]
			case "plist/dict/dict", "plist/dict", "plist":
			default:
				t.Fatalf("unexpected element %s", p)
			}
			path = path[:len(path)-1]
		}
	}
	if len(path) != 0 {
		t.Fatalf("unbalanced plist")
	}
	return out
}

func TestLaunchdPlists(t *testing.T) {
	home := testdir.Temp(t)
	tg := testTarget(home, "")
	tg.exe, tg.config = weirdExe, weirdConfig

	f := launchdServicePlist(tg)
	if want := filepath.Join(home, "Library", "LaunchAgents", "com.github.tether-dev.tether.service.plist"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	if !strings.HasPrefix(string(f.Content), `<?xml version="1.0" encoding="UTF-8"?>`) || !strings.Contains(string(f.Content), "<!DOCTYPE plist") {
		t.Errorf("no XML declaration or plist doctype:\n%s", f.Content)
	}
	p := readPlist(t, f.Content)
	if p["Label"] != "com.github.tether-dev.tether.service" {
		t.Errorf("Label %v", p["Label"])
	}
	if want := []string{weirdExe, "--config", weirdConfig, "service", "run"}; !slices.Equal(p["ProgramArguments"].([]string), want) {
		t.Errorf("ProgramArguments %q, want %q", p["ProgramArguments"], want)
	}
	if p["RunAtLoad"] != true || p["KeepAlive"] != true {
		t.Errorf("RunAtLoad %v KeepAlive %v, want true true", p["RunAtLoad"], p["KeepAlive"])
	}
	if p["StandardErrorPath"] != filepath.Join(home, "Library", "Logs", "tether.log") {
		t.Errorf("StandardErrorPath %v", p["StandardErrorPath"])
	}

	f = launchdTrayPlist(testTarget(home, "work"))
	if want := filepath.Join(home, "Library", "LaunchAgents", "com.github.tether-dev.tether.tray.work.plist"); f.Path != want {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	p = readPlist(t, f.Content)
	if want := []string{"/opt/tether/bin/tether", "--profile", "work", "tray", "--at-login"}; !slices.Equal(p["ProgramArguments"].([]string), want) {
		t.Errorf("ProgramArguments %q, want %q", p["ProgramArguments"], want)
	}
	if p["RunAtLoad"] != true {
		t.Errorf("tray RunAtLoad %v", p["RunAtLoad"])
	}
	if _, ok := p["KeepAlive"]; ok {
		t.Error("the tray plist has KeepAlive: Quit would not stick")
	}
	if p["Label"] != "com.github.tether-dev.tether.tray.work" {
		t.Errorf("Label %v", p["Label"])
	}
}

func TestRunValues(t *testing.T) {
	tg := target{exe: `C:\Program Files\tether\tether.exe`, profile: "work", config: `C:\Users\Ann Lee\tether\my "quoted" cfg\`, getenv: func(string) string { return "" }}
	files, err := planService("windows", tg)
	if err != nil {
		t.Fatal(err)
	}
	f := files[0]
	if want := `HKCU\Software\Microsoft\Windows\CurrentVersion\Run\tether-work`; f.Path != want || !f.IsRegistryValue() {
		t.Errorf("path %s, want %s", f.Path, want)
	}
	want := []string{tg.exe, "--profile", "work", "--config", tg.config, "service", "run"}
	if got := parseWindowsCommandLine(t, string(f.Content)); !slices.Equal(got, want) {
		t.Errorf("command line %s\nparses as %q\nwant      %q", f.Content, got, want)
	}
	if !strings.HasPrefix(string(f.Content), `"C:\Program Files\tether\tether.exe" `) {
		t.Errorf("program not quoted: %s", f.Content)
	}

	tg.profile, tg.config = "", ""
	files, err = planTray("windows", tg)
	if err != nil {
		t.Fatal(err)
	}
	if f := files[0]; f.Path != `HKCU\Software\Microsoft\Windows\CurrentVersion\Run\tether.tray` || string(f.Content) != `"C:\Program Files\tether\tether.exe" tray --at-login` {
		t.Errorf("tray value %s = %s", f.Path, f.Content)
	}
	for _, s := range []string{"", `a\\b`, `a"b`, `trailing\`, `two words\\`, `\\"`, "tab\there"} {
		if got := parseWindowsCommandLine(t, `"x" `+windowsEscapeArg(s)); len(got) != 2 || got[1] != s {
			t.Errorf("%q escapes as %s, parses as %q", s, windowsEscapeArg(s), got)
		}
	}
}

// parseWindowsCommandLine splits like CommandLineToArgvW: the program name
// runs to the next quote (quoted) or blank; then 2n backslashes before a
// quote are n and the quote toggles, 2n+1 are n and a literal quote, and
// other backslashes are literal.
func parseWindowsCommandLine(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	if strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			t.Fatalf("unterminated program name in %s", s)
		}
		args = append(args, s[1:1+end])
		s = s[2+end:]
	} else {
		name, rest, _ := strings.Cut(s, " ")
		args, s = append(args, name), rest
	}
	var w strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				w.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					w.WriteByte('"')
				} else {
					inQuote = !inQuote
				}
			} else {
				w.WriteString(strings.Repeat(`\`, n))
				i--
			}
			inWord = true
		case c == '"':
			inQuote, inWord = !inQuote, true
		case (c == ' ' || c == '\t') && !inQuote:
			if inWord {
				args = append(args, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, w.String())
	}
	return args
}

// TestNamesDoNotCollide: every profile has its own unit, label, Run value
// and desktop file, the default profile's names are the same whether it
// is named or not, and service and tray names never meet.
func TestNamesDoNotCollide(t *testing.T) {
	home := testdir.Temp(t)
	seen := map[string]string{}
	add := func(name, owner string) {
		if prev, ok := seen[name]; ok && prev != owner {
			t.Errorf("%s and %s both use %s", prev, owner, name)
		}
		seen[name] = owner
	}
	for _, profile := range []string{"", "default", "work", "tray", "service", "tray.work", "service-work", "a"} {
		tg, err := resolve(Options{Executable: "/opt/tether", Profile: profile, Home: home, Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		owner := "profile " + tg.profileName()
		add("unit "+unitPath(tg), owner+" service")
		add("desktop "+desktopPath(tg), owner+" tray")
		add("plist "+launchdServicePlist(tg).Path, owner+" service")
		add("plist "+launchdTrayPlist(tg).Path, owner+" tray")
		add("run "+serviceRunName(tg), owner+" service")
		add("run "+trayRunName(tg), owner+" tray")
	}
	if len(seen) != 6*7 {
		t.Errorf("%d distinct names, want %d (7 distinct profiles x 6)", len(seen), 6*7)
	}
}

func TestResolve(t *testing.T) {
	home := testdir.Temp(t)
	t.Chdir(home)
	tg, err := resolve(Options{Executable: "bin/tether", ConfigPath: "cfg/agents.yaml", Profile: "default", Home: home, Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if tg.exe != filepath.Join(home, "bin", "tether") || tg.config != filepath.Join(home, "cfg", "agents.yaml") || tg.profile != "" {
		t.Errorf("resolved %+v", tg)
	}
	if got := tg.args("service", "run"); !slices.Equal(got, []string{tg.exe, "--config", tg.config, "service", "run"}) {
		t.Errorf("args %q", got)
	}
	for _, o := range []Options{
		{Executable: "/x", Profile: "../evil", Home: home},
		{Executable: "/x", Profile: "a b", Home: home},
		{Executable: "/x\nExecStartPre=/bin/rm", Home: home},
		{Executable: "/x", ConfigPath: "/c\x00", Home: home},
		{Executable: "/x", Home: "relative"},
	} {
		if _, err := Plan(o); err == nil {
			t.Errorf("Plan(%+v) accepted", o)
		}
	}
}

// snapshot lists everything under root.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPlanTouchesNothing(t *testing.T) {
	home := testdir.Temp(t)
	before := snapshot(t, home)
	o := Options{Executable: "/nonexistent/tether", Profile: "work", Home: home, Env: map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "cfg")}}
	files, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	tray, err := PlanTrayAutostart(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(tray) == 0 {
		t.Fatalf("empty plan: %v %v", files, tray)
	}
	for _, f := range append(files, tray...) {
		if len(f.Content) == 0 || f.Path == "" {
			t.Errorf("empty file in plan: %+v", f)
		}
		if _, err := os.Lstat(f.Path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after Plan (%v)", f.Path, err)
		}
	}
	if after := snapshot(t, home); !slices.Equal(before, after) {
		t.Errorf("Plan touched the home directory: %q -> %q", before, after)
	}
}

// The packaged unit is the user unit of the default profile, run by
// /usr/bin/tether, with a default PATH that each user's drop-in replaces.
func TestPackagedUnit(t *testing.T) {
	u := PackagedUnit()
	requireLines(t, u,
		"Type=notify",
		"ExecStart=/usr/bin/tether service run",
		"Environment=PATH=/usr/local/bin:/usr/bin:/bin",
		"KillMode=mixed",
		"TimeoutStopSec=30",
		"Delegate=yes",
		"WantedBy=default.target",
	)
	if strings.Contains(string(u), "tether service uninstall` removes it") {
		t.Errorf("the packaged unit says service uninstall removes it:\n%s", u)
	}
}
