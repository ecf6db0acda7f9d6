package install

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/windows/registry"
)

// The login service and the tray's autostart are values under HKCU's Run
// key, written, read back and removed for real (Wine keeps a registry of
// its own per prefix). The profile is unique to the run, so the values
// never meet a real installation's.
func TestRunValuesWindows(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Executable: exe, Profile: fmt.Sprintf("test-%d", os.Getpid())}
	t.Cleanup(func() {
		_, _ = Uninstall(o)
		_, _ = UninstallTrayAutostart(o)
	})
	plan, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || !plan[0].IsRegistryValue() {
		t.Fatalf("Plan = %+v, want one registry value", plan)
	}
	name := plan[0].Path[strings.LastIndexByte(plan[0].Path, '\\')+1:]

	res, err := Install(o)
	if err != nil || !res.Changed {
		t.Fatalf("Install = %+v, %v", res, err)
	}
	if got := readRun(t, name); got != string(plan[0].Content) {
		t.Errorf("the Run value holds %q, want %q", got, plan[0].Content)
	}
	if !strings.Contains(string(plan[0].Content), `"`+exe+`"`) || !strings.Contains(string(plan[0].Content), "service run") {
		t.Errorf("the command line %q does not run %s service run", plan[0].Content, exe)
	}
	if res, err := Install(o); err != nil || res.Changed {
		t.Errorf("a second Install = %+v, %v, want no change", res, err)
	}
	st, err := Status(o)
	if err != nil || !st.Installed || !st.Current || !st.Enabled || !st.Reachable || st.Restarts {
		t.Errorf("Status = %+v, %v, want installed, current, enabled, with no manager to restart it", st, err)
	}
	if s, ok, err := Installed(o); !ok || err != nil || s != (Settings{}) {
		t.Errorf("Installed = %+v, %v, %v: a Run value fixes no settings", s, ok, err)
	}
	// Disable removes the value (a Run value only starts at logon, and
	// its removal stops nothing); Install puts it back.
	if res, err := Disable(o); err != nil || !res.Changed || !strings.Contains(res.Message, "no longer starts at logon") {
		t.Errorf("Disable = %+v, %v", res, err)
	}
	if got := readRun(t, name); got != "" {
		t.Errorf("the Run value is still there after Disable: %q", got)
	}
	if res, err := Install(o); err != nil || !res.Changed {
		t.Fatalf("Install after Disable = %+v, %v", res, err)
	}

	if res, err := InstallTrayAutostart(o); err != nil || !res.Changed {
		t.Fatalf("InstallTrayAutostart = %+v, %v", res, err)
	}
	if ok, err := TrayAutostartInstalled(o); err != nil || !ok {
		t.Errorf("TrayAutostartInstalled = %v, %v", ok, err)
	}
	tray, err := PlanTrayAutostart(o)
	if err != nil {
		t.Fatal(err)
	}
	trayName := tray[0].Path[strings.LastIndexByte(tray[0].Path, '\\')+1:]
	if got := readRun(t, trayName); got != string(tray[0].Content) || !strings.HasSuffix(got, " tray --at-login") {
		t.Errorf("the tray's Run value holds %q, want %q, ending in tray --at-login", got, tray[0].Content)
	}

	if res, err := Uninstall(o); err != nil || !res.Changed {
		t.Fatalf("Uninstall = %+v, %v", res, err)
	}
	if got := readRun(t, name); got != "" {
		t.Errorf("the Run value is still there: %q", got)
	}
	if res, err := Uninstall(o); err != nil || res.Changed {
		t.Errorf("a second Uninstall = %+v, %v, want nothing to do", res, err)
	}
	if res, err := UninstallTrayAutostart(o); err != nil || !res.Changed {
		t.Errorf("UninstallTrayAutostart = %+v, %v", res, err)
	}
	if ok, err := TrayAutostartInstalled(o); err != nil || ok {
		t.Errorf("TrayAutostartInstalled after removal = %v, %v", ok, err)
	}
}

// readRun reads the Run value name; "" when there is none.
func readRun(t *testing.T, name string) string {
	t.Helper()
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if err != nil {
		t.Fatalf("opening HKCU\\%s: %v", runKey, err)
	}
	defer k.Close()
	v, _, err := k.GetStringValue(name)
	if err == registry.ErrNotExist {
		return ""
	}
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return v
}

// Stop names no manager whether or not a Run value is written: the
// command line then asks the running service to quit through its API,
// which stops one the tray started as well as one started at logon.
func TestStopWithoutRunValueWindows(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Executable: exe, Profile: fmt.Sprintf("test-stop-%d", os.Getpid())}
	if err := Stop(o); !errors.Is(err, ErrNoServiceManager) || errors.Is(err, ErrNotInstalled) {
		t.Errorf("Stop without a Run value = %v, want ErrNoServiceManager", err)
	}
}
