package cli

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"
)

// version prints what this binary is: its version (the one linked in with
// -ldflags "-X main.version=...", else the module's, from the build info:
// a tag, or a pseudo-version from the commit when built in a checkout),
// the commit it was built from and that commit's time, and the Go
// toolchain. A binary built without version control information (go
// build -buildvcs=false, or outside a checkout) says so.
func (inv *invocation) version(args []string) int {
	if len(args) > 0 {
		return inv.usage(fmt.Errorf("usage: tether version"))
	}
	info, _ := debug.ReadBuildInfo()
	writeVersion(inv.stdout, Version, info)
	return ExitOK
}

// writeVersion writes the lines of `tether version`: linked is the
// link-time version ("dev" when none was given), info the build info
// (nil when the binary has none).
func writeVersion(w io.Writer, linked string, info *debug.BuildInfo) {
	v := linked
	if v == "dev" || v == "" {
		v = "devel"
		if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
	}
	fmt.Fprintf(w, "tether %s\n", v)
	if info == nil {
		fmt.Fprintln(w, "no build information in this binary")
		return
	}
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		line := "commit " + rev
		if t, err := time.Parse(time.RFC3339, set["vcs.time"]); err == nil {
			line += " of " + t.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		if set["vcs.modified"] == "true" {
			line += ", with changes not committed"
		}
		fmt.Fprintln(w, line)
	} else {
		fmt.Fprintln(w, "commit unknown: built without version control information")
	}
	goos, goarch := set["GOOS"], set["GOARCH"]
	fmt.Fprintf(w, "built with %s for %s\n", info.GoVersion, strings.Trim(goos+"/"+goarch, "/"))
}
