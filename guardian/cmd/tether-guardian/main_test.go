// The packages of every platform are listed from one: the tests of the
// Windows packages run under Wine, where no go command is.

//go:build unix

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the packages no guardian may link: tether's service, tray,
// command line and clients, and the libraries only they need (the
// keychain's too: the service reads secrets, never the guardian). Each is
// a path and everything below it. Of what the guardian does link, godbus
// is for the transient scope it puts itself in (one package initializer
// of a few allocations); crypto/tls for the https readiness checks.
var forbidden = []string{
	"github.com/tether-dev/tether/api",
	"github.com/tether-dev/tether/assets",
	"github.com/tether-dev/tether/cli",
	"github.com/tether-dev/tether/client",
	"github.com/tether-dev/tether/demo",
	"github.com/tether-dev/tether/install",
	"github.com/tether-dev/tether/service",
	"github.com/tether-dev/tether/tray",
	"github.com/kardianos/service",
	"fyne.io/systray",
	"github.com/gen2brain/beeep",
	"gopkg.in/yaml.v3",
	"go.etcd.io",
	"google.golang.org/grpc",
	"github.com/zalando/go-keyring",
	"github.com/danieljoos/wincred",
	"net/http",
}

// The guardian's executable links nothing of the rest of tether, on
// every platform it is built for.
func TestLinksNothingOfTheRest(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no go command to list the packages with: %v", err)
		}
		t.Skipf("SKIP: no go command to list the packages with: %v", err)
	}
	for _, target := range [][2]string{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
		t.Run(target[0], func(t *testing.T) {
			cmd := exec.Command(goTool, "list", "-deps", ".")
			cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, stderrOf(err))
			}
			for _, p := range strings.Fields(string(out)) {
				if f := forbiddenBy(p); f != "" {
					t.Errorf("the guardian links %s (forbidden: %s); see go list -deps ./guardian/cmd/tether-guardian", p, f)
				}
			}
		})
	}
}

// forbiddenBy returns the entry of forbidden that p is, or is below; "".
func forbiddenBy(p string) string {
	for _, f := range forbidden {
		if p == f || strings.HasPrefix(p, f+"/") {
			return f
		}
	}
	return ""
}

func TestForbiddenBy(t *testing.T) {
	for p, want := range map[string]string{
		"net/http":                                    "net/http",
		"net/http/httptrace":                          "net/http",
		"net/url":                                     "",
		"github.com/tether-dev/tether/api":            "github.com/tether-dev/tether/api",
		"github.com/tether-dev/tether/apix":           "",
		"github.com/tether-dev/tether/guard":          "",
		"go.etcd.io/etcd/client/v3":                   "go.etcd.io",
		"github.com/tether-dev/tether/service/config": "github.com/tether-dev/tether/service",
	} {
		if got := forbiddenBy(p); got != want {
			t.Errorf("forbiddenBy(%q) = %q, want %q", p, got, want)
		}
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
