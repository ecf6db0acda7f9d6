package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

func randomSecret(t *testing.T) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "s3cret-" + hex.EncodeToString(b[:])
}

// An env_file's secret reaches the agent, and nothing else: not the
// status, the logs, the event stream, the service's stderr, the state
// directory, nor the command line or environment of the service and the
// guardian (I5).
func TestEnvFileSecretReachesOnlyTheAgent(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	secret := randomSecret(t)
	envFile := filepath.Join(w.dir, "x.env")
	if err := os.WriteFile(envFile, []byte("# the agent's token\nexport SECRET="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(w.dir, "agent-env")
	w.writeConfig(fmt.Sprintf(`agents:
  - id: x
    identity: x@relay
    command: [/bin/sh, -c, 'env > "$1.tmp" && mv "$1.tmp" "$1"; echo "agent up"; sleep 1000 & wait', %s, %s]
    env_file: %s
    env: {VISIBLE: plain}
    autostart: false
    stop_timeout: 2s
`, m, dump, envFile))
	svc := w.startService("default")

	// Watch the event stream, with the agent's log, from before the start.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := w.client("default").Events(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	var stream strings.Builder
	var sawLog, sawRunning bool
	streamDone := make(chan struct{})
	gotLog := make(chan struct{})
	go func() {
		defer close(streamDone)
		for ev, err := range events {
			if err != nil {
				return
			}
			b, _ := json.Marshal(ev)
			stream.Write(append(b, '\n'))
			if ev.Type == api.EventAgent && ev.Agent.State == api.StateRunning {
				sawRunning = true
			}
			if ev.Type == api.EventLog && strings.Contains(ev.Line, "agent up") && !sawLog {
				sawLog = true
				close(gotLog)
			}
		}
	}()

	w.mustRun("start", "x")
	x := w.waitState("default", "x", api.StateRunning)
	// The agent got the secret, and the plain variable beside it.
	var env []byte
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		env, _ = os.ReadFile(dump)
		return len(env) > 0
	}) {
		t.Fatal("the agent never wrote its environment")
	}
	for _, want := range []string{"SECRET=" + secret + "\n", "VISIBLE=plain\n", "TETHER_IDENTITY=x@relay\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the agent's environment lacks %q:\n%s", want, env)
		}
	}
	select {
	case <-gotLog:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream never carried the agent's log line")
	}
	// A restart reads the env_file again and sends more events.
	w.mustRun("restart", "x")
	x2 := w.waitState("default", "x", api.StateRunning)
	cancel()
	<-streamDone
	if !sawRunning {
		t.Errorf("the event stream never showed x running:\n%s", stream.String())
	}

	places := map[string]string{
		"status --json":  w.mustRun("status", "--json").stdout,
		"status":         w.mustRun("status").stdout,
		"logs":           w.mustRun("logs", "x", "-n", "1000").stdout,
		"event stream":   stream.String(),
		"service stderr": svc.output(),
	}
	for _, pid := range []struct {
		what string
		pid  int
	}{{"service", svc.cmd.Process.Pid}, {"guardian", x2.GuardianPID}} {
		for _, f := range []string{"cmdline", "environ"} {
			places[fmt.Sprintf("/proc/<%s pid>/%s", pid.what, f)] = readProc(t, pid.pid, f)
		}
	}
	if !strings.Contains(places["logs"], "agent up") {
		t.Errorf("logs lack the agent's line:\n%s", places["logs"])
	}
	for what, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("the secret is in %s:\n%s", what, text)
		}
	}
	// Nor is it anywhere under the state or runtime directories.
	for _, d := range []string{"state", "run"} {
		_ = filepath.WalkDir(filepath.Join(w.dir, d), func(path string, de fs.DirEntry, err error) error {
			if err != nil || !de.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), secret) {
				t.Errorf("the secret is in %s", path)
			}
			return nil
		})
	}
	if x2.PID == x.PID {
		t.Errorf("restart kept pid %d", x.PID)
	}
}

// A world-readable env_file is refused: "tether check" exits 1 naming
// the file, and a start reports it as a config error without starting
// anything. Neither message quotes the file's content.
func TestEnvFileWorldReadableIsRefused(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	secret := randomSecret(t)
	envFile := filepath.Join(w.dir, "open.env")
	if err := os.WriteFile(envFile, []byte("SECRET="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeConfig("agents:\n" + agentYAML("x", "x@relay", m, false) + "    env_file: " + envFile + "\n")
	if r := w.run(10*time.Second, "check"); r.code != 0 {
		t.Fatalf("check of a private env_file: exit %d: %s", r.code, r.stderr)
	}
	w.startService("default")

	// Opened to every user after the service loaded the config.
	if err := os.Chmod(envFile, 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.run(10*time.Second, "check")
	if r.code != 1 || !strings.Contains(r.stderr, envFile) || !strings.Contains(r.stderr, "env_file") {
		t.Errorf("check of a world-readable env_file: exit %d, stderr %q; want 1 naming %s", r.code, r.stderr, envFile)
	}
	r2 := w.run(30*time.Second, "start", "x")
	if r2.code != 1 || !strings.Contains(r2.stderr, envFile) {
		t.Errorf("start with a world-readable env_file: exit %d, stderr %q; want 1 naming %s", r2.code, r2.stderr, envFile)
	}
	row := w.waitState("default", "x", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeConfig {
		t.Errorf("x failed with %+v, want code %s", row.Error, api.CodeConfig)
	}
	if n := len(sessionsOf(m)); n != 0 {
		t.Errorf("%d trees started from a world-readable env_file", n)
	}
	for what, text := range map[string]string{"check": r.stdout + r.stderr, "start": r2.stdout + r2.stderr, "status": fmt.Sprint(row.Error)} {
		if strings.Contains(text, secret) {
			t.Errorf("%s quotes the secret: %s", what, text)
		}
	}

	// A line that is not KEY=VALUE is named by its line, not quoted.
	if err := os.WriteFile(envFile, []byte("A=1\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(envFile, 0o600); err != nil {
		t.Fatal(err)
	}
	r = w.run(10*time.Second, "check")
	if r.code != 1 || !strings.Contains(r.stderr, envFile+":2") || strings.Contains(r.stderr, secret) {
		t.Errorf("check of a malformed env_file: exit %d, stderr %q; want 1 naming %s:2 without its content", r.code, r.stderr, envFile)
	}
}
