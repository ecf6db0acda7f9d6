package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestWriteVersion(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tether-dev/tether", Version: "v0.0.0-20261201101125-b32545f3b229"},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "b32545f3b229e60996e928c9c6d4c46be0fbcaff"}, {Key: "vcs.time", Value: "2026-12-01T10:11:25Z"}, {Key: "vcs.modified", Value: "true"}}}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tether-dev/tether", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}}}
	for _, c := range []struct {
		name   string
		linked string
		info   *debug.BuildInfo
		want   string
	}{
		{"checkout", "dev", vcs, "tether v0.0.0-20261201101125-b32545f3b229\ncommit b32545f3b229e60996e928c9c6d4c46be0fbcaff of 2026-12-01 10:11:25 UTC, with changes not committed\nbuilt with go1.26.8 for linux/amd64\n"},
		{"linked", "v1.2.3", vcs, "tether v1.2.3\ncommit b32545f3b229e60996e928c9c6d4c46be0fbcaff of 2026-12-01 10:11:25 UTC, with changes not committed\nbuilt with go1.26.8 for linux/amd64\n"},
		{"devel", "dev", devel, "tether devel\ncommit unknown: built without version control information\nbuilt with go1.26.8 for darwin/arm64\n"},
		{"no build info", "dev", nil, "tether devel\nno build information in this binary\n"},
	} {
		var b strings.Builder
		writeVersion(&b, c.linked, c.info)
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, b.String(), c.want)
		}
	}
}
