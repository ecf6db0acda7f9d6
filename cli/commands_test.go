package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether-dev/tether/service/config"
)

// config init never overwrites a config, and says how to see the default
// one beside it; --print shows it.
func TestConfigInitOffersTheDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(path, []byte("agents: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--config", path, "config", "init"}, &stdout, &stderr); code != ExitFailure {
		t.Fatalf("config init over a config: exit %d, want %d", code, ExitFailure)
	}
	if !strings.Contains(stderr.String(), "not overwriting") || !strings.Contains(stderr.String(), "tether config init --print") {
		t.Errorf("config init over a config says %q, want it to offer --print", stderr.String())
	}
	if b, _ := os.ReadFile(path); string(b) != "agents: []\n" {
		t.Errorf("the config was changed: %q", b)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--config", path, "config", "init", "--print"}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("config init --print: exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), config.Default()) {
		t.Errorf("config init --print wrote %d bytes, not the default config", stdout.Len())
	}
}
