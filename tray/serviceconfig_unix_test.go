//go:build unix

package tray

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

func TestForService(t *testing.T) {
	o := Options{Profile: "work", ConfigFlag: "", ConfigFile: "/home/u/.config/tether/agents.yaml"}
	if got := o.forService(serviceConfig{}); got.ConfigFile != o.ConfigFile || got.ConfigFlag != o.ConfigFlag {
		t.Errorf("nothing heard: %+v, want the tray's own %+v", got, o)
	}
	got := o.forService(serviceConfig{path: "/srv/other.yaml", given: true})
	if got.ConfigFile != "/srv/other.yaml" || got.ConfigFlag != "/srv/other.yaml" || got.Profile != "work" {
		t.Errorf("--config other.yaml: %+v", got)
	}
	if f := got.globalFlags(); !slices.Equal(f, []string{"--profile", "work", "--config", "/srv/other.yaml"}) {
		t.Errorf("flags %q", f)
	}
	flagged := Options{ConfigFlag: "/tray/own.yaml", ConfigFile: "/tray/own.yaml"}
	got = flagged.forService(serviceConfig{path: "/home/u/.config/tether/agents.yaml"})
	if got.ConfigFlag != "" || got.ConfigFile != "/home/u/.config/tether/agents.yaml" {
		t.Errorf("a service on its default config: %+v, want no --config and its file", got)
	}
}

// TestEngineUsesTheServiceConfig: with the service running another
// config than the tray's own, Open config opens the service's file, and
// once the service is gone Start service starts it with the same
// --config.
func TestEngineUsesTheServiceConfig(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	other := filepath.Join(dir, "other.yaml")
	f := startFake(t, sock, agent("alice", api.StateRunning, time.Minute, nil))
	f.mu.Lock()
	f.status.ConfigPath, f.status.ConfigGiven = other, true
	f.mu.Unlock()

	o := &fakeOS{}
	d := o.deps()
	var mu sync.Mutex
	var started []Options
	d.startService = func(opts Options) (string, <-chan error, error) {
		mu.Lock()
		defer mu.Unlock()
		started = append(started, opts)
		return "the fake service", nil, nil
	}
	d.configInit = func(Options) error { t.Error("config init of a file that exists"); return nil }
	u := &fakeUI{}
	opts := Options{Socket: sock, LogDir: dir, ConfigFile: filepath.Join(dir, "agents.yaml")}
	e := newEngine(context.Background(), opts, d, u)
	e.start()
	t.Cleanup(func() {
		if !e.stop(10 * time.Second) {
			t.Error("the engine's goroutines did not end")
		}
	})
	if err := os.WriteFile(other, []byte("agents: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	m := u.waitMenu(t, "1 running", firstLine("1 running"))
	e.act(findAction(t, m, titleOpenConfig))
	testproc.Eventually(t, 10*time.Second, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.opened) > 0
	}, "the config was not opened within 10 s")
	o.mu.Lock()
	if o.opened[0] != other {
		t.Errorf("opened %q, want the service's %q", o.opened[0], other)
	}
	o.mu.Unlock()

	f.stop()
	m = u.waitMenu(t, "service not running", firstLine("service not running"))
	e.act(findAction(t, m, titleStartService))
	testproc.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(started) > 0
	}, "the service was not started within 10 s")
	mu.Lock()
	defer mu.Unlock()
	if got := started[0]; got.ConfigFlag != other || !slices.Contains(got.globalFlags(), other) {
		t.Errorf("started with %+v (flags %q), want --config %s", got, got.globalFlags(), other)
	}
}
