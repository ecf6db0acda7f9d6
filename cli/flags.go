package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/tether-dev/tether/internal/suggest"
)

// unknownFlagError is a flag the command does not have, and the flag it
// most likely stands for ("" when none is near).
type unknownFlagError struct {
	Flag, Meant string
}

// globalFlagNames are the global flags' names, without their dashes.
func globalFlagNames() []string {
	names := make([]string, len(globalFlags))
	for i, g := range globalFlags {
		names[i] = strings.TrimLeft(g, "-")
	}
	return names
}

func (e *unknownFlagError) Error() string {
	if e.Meant == "" {
		return fmt.Sprintf("unknown flag %s", e.Flag)
	}
	return fmt.Sprintf("unknown flag %s; did you mean --%s?", e.Flag, e.Meant)
}

// newFlags is the flag set of a command. A bad flag value prints the
// flag package's one line; a flag the command does not have is an
// *unknownFlagError from parseFlags; the caller's usage line follows
// either (--help never reaches here: Main answers it).
func newFlags(name string, inv *invocation) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(inv.stderr)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs after looking at each flag the way the
// flag package will (up to the first argument that is not one, or
// "--"), so that a flag fs does not have is an *unknownFlagError that
// names the flag meant: one of fs's or a global one.
func parseFlags(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if name == "" || name == "h" || name == "help" {
			break // the flag package's own error, or help
		}
		f := fs.Lookup(name)
		if f == nil {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			names = append(names, globalFlagNames()...)
			return &unknownFlagError{Flag: a, Meant: suggest.Best(name, names)}
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && (!ok || !b.IsBoolFlag()) {
			i++ // the flag's value
		}
	}
	return fs.Parse(args)
}

// commandUsage answers a command used wrongly: a flag it does not have,
// with the one meant (the flag package has already said what was wrong
// with any other), then the command's one usage line.
func (inv *invocation) commandUsage(err error, line string) int {
	if ue, ok := errors.AsType[*unknownFlagError](err); ok {
		fmt.Fprintln(inv.stderr, "tether:", ue)
	}
	fmt.Fprintln(inv.stderr, line)
	return ExitUsage
}
