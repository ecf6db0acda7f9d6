package tests

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStatusNamesTheConfig: the status says which config file the
// service reads and whether --config named it, so that the tray opens
// that file and starts the service on it again.
func TestStatusNamesTheConfig(t *testing.T) {
	w := newWorld(t)
	other := filepath.Join(w.dir, "other.yaml")
	if err := os.WriteFile(other, []byte("agents: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.startServiceArgs("work", "--config", other)
	st, err := w.client("work").Status(context.Background())
	if err != nil || st.ConfigPath != other || !st.ConfigGiven || st.Profile != "work" {
		t.Errorf("with --config: %q given %v, profile %q (%v); want %q given", st.ConfigPath, st.ConfigGiven, st.Profile, err, other)
	}
	w.startService("default")
	st, err = w.client("default").Status(context.Background())
	if err != nil || st.ConfigPath != w.configPath() || st.ConfigGiven {
		t.Errorf("without --config: %q given %v (%v); want %q, not given", st.ConfigPath, st.ConfigGiven, err, w.configPath())
	}
}
