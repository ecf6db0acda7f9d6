// Package buildinfo says which tether this binary is: its version, the
// commit it was built from and that commit's date. A release build sets
// them at link time:
//
//	go build -ldflags "-X github.com/tether-dev/tether/internal/buildinfo.Version=1.2.3
//	    -X github.com/tether-dev/tether/internal/buildinfo.Commit=<full hash>
//	    -X github.com/tether-dev/tether/internal/buildinfo.Date=2026-12-05"
//
// (make build and make dist do), so a build that cannot stamp version
// control information (-buildvcs=false, a source archive) still knows
// them. Without them, Get falls back to what the Go toolchain recorded.
// It imports nothing of tether's: any package may ask.
package buildinfo

import (
	"runtime/debug"
	"time"
)

// Set at link time with -X; empty when not.
var (
	// Version is the release, without a leading "v": 1.2.3, or what `git
	// describe` says between releases.
	Version string
	// Commit is the full hash of the commit the binary was built from.
	Commit string
	// Date is that commit's date, YYYY-MM-DD (UTC).
	Date string
)

// Devel is the version of a binary that has none: neither linked in nor
// recorded by the toolchain (a plain go build in a checkout).
const Devel = "devel"

// Info is what Get found.
type Info struct {
	Version string // never empty: Devel when unknown
	Commit  string // "" when unknown
	Date    string // YYYY-MM-DD; "" when unknown
	// Modified: built from a tree with changes not committed (known only
	// from the toolchain's record).
	Modified bool
	// GoVersion and Platform (GOOS/GOARCH) are the toolchain's, ""
	// without build information.
	GoVersion string
	Platform  string
	// HasBuildInfo is false for a binary without the toolchain's record.
	HasBuildInfo bool
}

// Get returns the linked values, each completed from the toolchain's
// record where it was not linked.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, Date, bi)
}

// resolve is Get with its inputs.
func resolve(version, commit, date string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, Date: date}
	if bi != nil {
		in.HasBuildInfo = true
		in.GoVersion = bi.GoVersion
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		if in.Commit == "" {
			in.Commit = set["vcs.revision"]
			in.Modified = set["vcs.modified"] == "true"
		}
		if in.Date == "" && set["vcs.revision"] != "" {
			if t, err := time.Parse(time.RFC3339, set["vcs.time"]); err == nil {
				in.Date = t.UTC().Format(time.DateOnly)
			}
		}
		in.Platform = set["GOOS"] + "/" + set["GOARCH"]
		if in.Platform == "/" {
			in.Platform = ""
		}
	}
	if in.Version == "" {
		in.Version = Devel
	}
	return in
}
