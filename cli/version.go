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
		fmt.Fprintln(w, commitText(in.Commit, in.Date, in.Modified))
	} else if in.HasBuildInfo {
		fmt.Fprintln(w, "commit unknown: built without version control information")
	}
	if !in.HasBuildInfo {
		fmt.Fprintln(w, "no build information in this binary")
		return
	}
	fmt.Fprintf(w, "built with %s for %s\n", in.GoVersion, in.Platform)
}

// commitText says which commit a binary was built from, as `tether
// version` and the service's line of `tether status` say it: "commit
// <hash> of <date>", and whether the tree had changes not committed.
func commitText(commit, date string, modified bool) string {
	line := "commit " + commit
	if date != "" {
		line += " of " + date
	}
	if modified {
		line += ", with changes not committed"
	}
	return line
}
