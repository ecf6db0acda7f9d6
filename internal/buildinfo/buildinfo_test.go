package buildinfo

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tether-dev/tether", Version: "v0.0.0-20261201101125-b32545f3b229"},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "b32545f3b229e60996e928c9c6d4c46be0fbcaff"}, {Key: "vcs.time", Value: "2026-12-01T23:11:25-02:00"}, {Key: "vcs.modified", Value: "true"}}}
	novcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tether-dev/tether", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"}}}
	for _, c := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{"toolchain's record", "", "", "", vcs,
			Info{Version: "v0.0.0-20261201101125-b32545f3b229", Commit: "b32545f3b229e60996e928c9c6d4c46be0fbcaff", Date: "2026-12-02", Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64", HasBuildInfo: true}},
		{"stamped wins", "1.2.3", "0123456789012345678901234567890123456789", "2026-12-05", vcs,
			Info{Version: "1.2.3", Commit: "0123456789012345678901234567890123456789", Date: "2026-12-05", GoVersion: "go1.26.8", Platform: "linux/amd64", HasBuildInfo: true}},
		{"stamped without vcs", "1.2.3", "0123456789012345678901234567890123456789", "2026-12-05", novcs,
			Info{Version: "1.2.3", Commit: "0123456789012345678901234567890123456789", Date: "2026-12-05", GoVersion: "go1.26.8", Platform: "darwin/arm64", HasBuildInfo: true}},
		{"nothing known", "", "", "", novcs,
			Info{Version: Devel, GoVersion: "go1.26.8", Platform: "darwin/arm64", HasBuildInfo: true}},
		{"no build info", "", "", "", nil, Info{Version: Devel}},
	} {
		if got := resolve(c.version, c.commit, c.date, c.bi); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// TestLinkerStamps builds a program with the -X flags make build uses,
// with the toolchain's own stamping off, and checks that it reports them.
func TestLinkerStamps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	const pkg = "github.com/tether-dev/tether/internal/buildinfo"
	bin := filepath.Join(dir, "stamped")
	ldflags := "-X " + pkg + ".Version=9.8.7 -X " + pkg + ".Commit=0123456789abcdef0123456789abcdef01234567 -X " + pkg + ".Date=2026-12-05"
	cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-ldflags", ldflags, "-o", bin, "./testdata/stamped")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), "9.8.7 0123456789abcdef0123456789abcdef01234567 2026-12-05"; got != want {
		t.Errorf("stamped binary says %q, want %q", got, want)
	}
}
