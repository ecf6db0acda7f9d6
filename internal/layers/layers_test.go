package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayers checks the module's import graph, as built for each
// operating system tether supports, against the rules. Test files are
// left out: a test may import what its package may not.
func TestLayers(t *testing.T) {
	for _, goos := range []string{"linux", "windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			g := moduleGraph(t, goos)
			for _, want := range []string{"api", "client", "guardian", "service", "tray", "wire", "platform/unix", "platform/windows"} {
				if _, ok := g[want]; !ok {
					t.Fatalf("go list did not report %s: the rules would check nothing", want)
				}
			}
			for _, breach := range check(g) {
				t.Error(breach)
			}
		})
	}
}

// moduleGraph is the module's packages as built for goos, each with its
// direct imports among them.
func moduleGraph(t *testing.T, goos string) graph {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Error", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list for %s: %v\n%s", goos, err, stderr.Bytes())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's answer: %v", err)
		}
		if p.Error != nil && !strings.Contains(p.Error.Err, "build constraints exclude all Go files") {
			t.Fatalf("go list %s for %s: %s", p.ImportPath, goos, p.Error.Err)
		}
		from, ok := ours(p.ImportPath)
		if !ok {
			continue
		}
		g[from] = nil
		for _, imp := range p.Imports {
			if to, ok := ours(imp); ok {
				g[from] = append(g[from], to)
			}
		}
	}
	return g
}

// The guardian links none of what only the service needs: the etcd
// client, gRPC, zap.
func TestGuardianLinksNoEtcd(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, goos := range []string{"linux", "windows", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "./guardian/...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0", "GOFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps for %s: %v", goos, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, never := range GuardianNever {
				if strings.HasPrefix(dep, never) {
					t.Errorf("%s: the guardian links %s", goos, dep)
				}
			}
		}
	}
}

// ours returns the path of a package of the module relative to Module.
func ours(importPath string) (string, bool) {
	if importPath == Module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	return rel, ok
}

// The rules catch an upward import, direct or through another package,
// and let the allowed ones pass.
func TestRulesCatchUpwardImports(t *testing.T) {
	allowed := graph{
		".":                {"cli"},
		"cli":              {"service", "tray", "demo", "client", "api"},
		"service":          {"guardian", "api", "service/config", "service/state", "service/lease", "platform", "wire"},
		"service/config":   {"api", "identity"},
		"service/state":    {"api"},
		"guardian":         {"platform", "wire", "identity"},
		"platform":         {"platform/unix"},
		"platform/unix":    nil,
		"platform/windows": nil,
		"tray":             {"client", "api"},
		"client":           {"api", "platform", "wire"},
		"api":              {"wire"},
		"wire":             nil,
		"identity":         nil,
		"demo":             {"client", "guardian"},
		"service/lease":    {"service/config"},
	}
	if got := check(allowed); len(got) > 0 {
		t.Fatalf("the allowed graph breaks the rules:\n%s", strings.Join(got, "\n"))
	}
	for _, c := range []struct {
		from, to string
		want     string // a word of the breach
	}{
		{"api", "platform", "api reaches platform (api -> platform)"},
		{"api", "identity", "api reaches identity"},
		{"tray", "service", "tray reaches service (tray -> service)"},
		{"client", "guardian", "client reaches guardian"},
		{"guardian", "service/state", "guardian reaches service/state"},
		{"guardian", "client", "guardian reaches client"},
		{"wire", "identity", "wire reaches identity"},
		{"service/state", "client", "service/state reaches platform (service/state -> client -> platform)"},
		{"platform/unix", "wire", "platform/unix reaches wire"},
		{"demo", "service", "demo reaches service (demo -> service)"},
		{"guardian", "service/lease", "guardian imports service/lease"},
		{"cli", "service/lease", "cli imports service/lease"},
	} {
		g := graph{}
		for k, v := range allowed {
			g[k] = slices.Clone(v)
		}
		g[c.from] = append(g[c.from], c.to)
		got := check(g)
		if !slices.ContainsFunc(got, func(b string) bool { return strings.HasPrefix(b, c.want) }) {
			t.Errorf("%s importing %s: breaches %q, want one beginning %q", c.from, c.to, got, c.want)
		}
	}
}
