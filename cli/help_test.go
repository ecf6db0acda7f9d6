package cli

import (
	"strings"
	"testing"
)

// runCLI runs the command line with args and returns the exit code and
// what it wrote.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpOfEveryCommand: every command has help with a usage line and
// an example, the same from `tether help CMD` and `tether CMD --help`.
func TestHelpOfEveryCommand(t *testing.T) {
	for _, d := range docs {
		code, help, errs := runCLI(t, "help", d.name)
		if code != ExitOK || errs != "" {
			t.Errorf("help %s: exit %d, stderr %q", d.name, code, errs)
		}
		if !strings.HasPrefix(help, "usage: tether "+d.usage+"\n") {
			t.Errorf("help %s does not begin with its usage %q:\n%s", d.name, d.usage, help)
		}
		if !strings.Contains(help, "\nexample:\n  tether ") && !strings.Contains(help, "\nexample:\n  source <(tether ") {
			t.Errorf("help %s has no example:\n%s", d.name, help)
		}
		for _, flag := range []string{"--help", "-h"} {
			if d.name == "help" {
				continue
			}
			if code, got, _ := runCLI(t, d.name, flag); code != ExitOK || got != help {
				t.Errorf("%s %s: exit %d, and not the same as help %s:\n%s", d.name, flag, code, d.name, got)
			}
		}
	}
	if code, _, errs := runCLI(t, "help", "strat"); code != ExitUsage || !strings.Contains(errs, `did you mean "start"?`) {
		t.Errorf("help strat: exit %d, stderr %q", code, errs)
	}
}

// TestUsage: the usage lists every command, writes ids as ID..., and
// says how to get more.
func TestUsage(t *testing.T) {
	code, usage, _ := runCLI(t, "help")
	if code != ExitOK || !strings.HasPrefix(usage, globalUsage) {
		t.Fatalf("help: exit %d\n%s", code, usage)
	}
	for _, d := range docs {
		if !strings.Contains(usage, "\n  "+d.usage+" ") && !strings.Contains(usage, "\n  "+d.usage+"\n") {
			t.Errorf("the usage has no line for %s", d.name)
		}
	}
	for _, want := range []string{"start [--no-wait] ID...", "stop ID...", "restart [--no-wait] ID...", "tether help COMMAND"} {
		if !strings.Contains(usage, want) {
			t.Errorf("the usage lacks %q", want)
		}
	}
	if _, got, _ := runCLI(t, "--help"); got != usage {
		t.Errorf("--help is not the usage")
	}
}

// TestDidYouMeanCommand: a mistyped command or service command is named
// with the one meant; a word that is nothing like one is not.
func TestDidYouMeanCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts"; did you mean "status"?`},
		{[]string{"--profile", "x", "restrat", "a"}, `did you mean "restart"?`},
		{[]string{"service", "instal"}, `unknown service command "instal"; did you mean "install"?`},
		{[]string{"completion", "bsh"}, `did you mean "bash"?`},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
	if _, _, errs := runCLI(t, "frobnicate"); strings.Contains(errs, "did you mean") {
		t.Errorf("frobnicate got a suggestion: %s", errs)
	}
}

func TestAsksHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false}, {[]string{"a", "-h"}, true}, {[]string{"--help"}, true}, {[]string{"-help"}, true},
		{[]string{"--", "-h"}, false}, {[]string{"--no-wait", "a"}, false},
	} {
		if got := asksHelp(c.args); got != c.want {
			t.Errorf("asksHelp(%q) = %v", c.args, got)
		}
	}
}
