package cli

import (
	"strings"
	"testing"

	"github.com/tether-dev/tether/internal/buildinfo"
)

func TestWriteVersion(t *testing.T) {
	const hash = "b32545f3b229e60996e928c9c6d4c46be0fbcaff"
	for _, c := range []struct {
		name string
		in   buildinfo.Info
		want string
	}{
		{"checkout", buildinfo.Info{Version: "v0.0.0-20261201101125-b32545f3b229", Commit: hash, Date: "2026-12-01", Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64", HasBuildInfo: true},
			"tether v0.0.0-20261201101125-b32545f3b229\ncommit " + hash + " of 2026-12-01, with changes not committed\nbuilt with go1.26.8 for linux/amd64\n"},
		{"stamped", buildinfo.Info{Version: "1.2.3", Commit: hash, Date: "2026-12-01", GoVersion: "go1.26.8", Platform: "linux/amd64", HasBuildInfo: true},
			"tether 1.2.3\ncommit " + hash + " of 2026-12-01\nbuilt with go1.26.8 for linux/amd64\n"},
		{"devel", buildinfo.Info{Version: buildinfo.Devel, GoVersion: "go1.26.8", Platform: "darwin/arm64", HasBuildInfo: true},
			"tether devel\ncommit unknown: built without version control information\nbuilt with go1.26.8 for darwin/arm64\n"},
		{"no build info", buildinfo.Info{Version: buildinfo.Devel}, "tether devel\nno build information in this binary\n"},
	} {
		var b strings.Builder
		writeVersion(&b, c.in)
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, b.String(), c.want)
		}
	}
}
