package cli

import (
	"fmt"
	"io"

	"github.com/tether-dev/tether/internal/buildinfo"
)

// version prints what this binary is: its version, the commit it was
// built from and that commit's date, and the Go toolchain, as package
// buildinfo knows them (stamped at link time by make build and make dist,
// else recorded by the toolchain). A binary built without either says so.
func (inv *invocation) version(args []string) int {
	if len(args) > 0 {
		return inv.usage(fmt.Errorf("usage: tether version"))
	}
	writeVersion(inv.stdout, buildinfo.Get())
	return ExitOK
}

// writeVersion writes the lines of `tether version`.
func writeVersion(w io.Writer, in buildinfo.Info) {
	fmt.Fprintf(w, "tether %s\n", in.Version)
	if in.Commit != "" {
		line := "commit " + in.Commit
		if in.Date != "" {
			line += " of " + in.Date
		}
		if in.Modified {
			line += ", with changes not committed"
		}
		fmt.Fprintln(w, line)
	} else if in.HasBuildInfo {
		fmt.Fprintln(w, "commit unknown: built without version control information")
	}
	if !in.HasBuildInfo {
		fmt.Fprintln(w, "no build information in this binary")
		return
	}
	fmt.Fprintf(w, "built with %s for %s\n", in.GoVersion, in.Platform)
}
