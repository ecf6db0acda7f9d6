package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseFlagsNamesTheFlagMeant(t *testing.T) {
	for _, c := range []struct {
		args  []string
		flag  string // "" when the args parse
		meant string
	}{
		{[]string{"--jsn"}, "--jsn", "json"},
		{[]string{"-jsn"}, "-jsn", "json"},
		{[]string{"--json", "--wdie"}, "--wdie", "wide"},
		{[]string{"--confg", "x"}, "--confg", "config"}, // a global flag in the wrong place
		{[]string{"--colour"}, "--colour", ""},
		{[]string{"--json=true", "--wide"}, "", ""},
		{[]string{"--json", "id", "--jsn"}, "", ""}, // after the first argument, flags end
		{[]string{"--", "--jsn"}, "", ""},
		{[]string{"-n", "--jsn"}, "", ""}, // -n's value, however it looks
	} {
		inv := &invocation{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer)}
		fs := newFlags("status", inv)
		fs.Bool("json", false, "")
		fs.Bool("wide", false, "")
		fs.String("n", "", "")
		err := parseFlags(fs, c.args)
		ue, ok := errors.AsType[*unknownFlagError](err)
		switch {
		case c.flag == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.flag != "" && !ok:
			t.Errorf("%q: %v, want an unknown flag %s", c.args, err, c.flag)
		case ok && (ue.Flag != c.flag || ue.Meant != c.meant):
			t.Errorf("%q: unknown %q meaning %q, want %q meaning %q", c.args, ue.Flag, ue.Meant, c.flag, c.meant)
		}
	}
}

// A usage error prints what was wrong and one usage line: the command's,
// or the global one with where the commands are listed, never the list.
func TestUsageErrorIsOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--jsn"}, "tether: unknown flag --jsn; did you mean --json?\nusage: tether status [--json] [--wide]\n"},
		{[]string{"start"}, "usage: tether start [--no-wait] ID...\n"},
		{[]string{"stauts"}, "tether: unknown command \"stauts\"; did you mean \"status\"?\n" + globalUsage + "\n\"tether help\" lists the commands\n"},
		{[]string{"--profil", "x", "status"}, "tether: unknown flag --profil; did you mean --profile?\n" + globalUsage + "\n\"tether help\" lists the commands\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", c.args, code, ExitUsage)
		}
		if stderr.String() != c.want {
			t.Errorf("%q: stderr\n%s\nwant\n%s", c.args, stderr.String(), c.want)
		}
		if strings.Contains(stderr.String(), "commands:") {
			t.Errorf("%q: the usage error lists the commands", c.args)
		}
	}
}
