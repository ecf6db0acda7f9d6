package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/keyringtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/internal/usermanager"
)

// withKeyring starts a real Secret Service (GNOME Keyring on a private
// session bus) as the world's user, and gives its bus to everything the
// world starts.
func (w *world) withKeyring() {
	w.t.Helper()
	k := keyringtest.Start(w.t, keyringtest.Options{Command: w.command, Dir: w.dir, Env: w.env})
	w.env = k.Env
}

// runIn is run with stdin as the command's standard input.
func (w *world) runIn(stdin string, args ...string) result {
	w.t.Helper()
	cmd := w.cmd(tether, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
	cmd.Env = w.env
	err := runBoundedErr(cmd, 60*time.Second)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("tether %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// runBoundedErr runs cmd for at most within, then kills it.
func runBoundedErr(cmd *exec.Cmd, within time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("did not finish within %v", within)
	}
}

// dumpingAgent is an agent entry whose command writes its environment
// to dump and then runs until stopped.
func dumpingAgent(id, marker, dump, more string) string {
	return fmt.Sprintf(`  - id: %s
    command: [/bin/sh, -c, 'env > "$1.tmp" && mv "$1.tmp" "$1"; echo "agent up"; sleep 1000 & wait', %s, %s]
    autostart: false
    stop_timeout: 2s
%s`, id, marker, dump, more)
}

// agentEnv waits for the environment an agent dumped.
func agentEnv(t *testing.T, dump string) string {
	t.Helper()
	var env []byte
	if !testproc.UntilEvery(15*time.Second, 5*time.Millisecond, func() bool {
		env, _ = os.ReadFile(dump)
		return len(env) > 0
	}) {
		t.Fatal("the agent never wrote its environment")
	}
	return string(env)
}

// A secret from the keychain and one from a command reach the agent, and
// nothing else: not the status, the logs, the event stream, the
// service's output, the state or runtime directories, the command line
// or environment of the service and the guardian, nor the handover
// record of an upgrade (I5). tether secret ls names them, never their
// values; tether secret set takes the value on stdin only.
func TestSecretsReachOnlyTheAgent(t *testing.T) {
	w := newWorld(t)
	w.withKeyring()
	m := uniqueMarker()
	cleanupTrees(t, m)
	fromKeyring, fromCommand := randomSecret(t), randomSecret(t)
	valueFile := filepath.Join(w.dir, "value")
	if err := os.WriteFile(valueFile, []byte(fromCommand+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(w.dir, "agent-env")
	w.writeConfig("agents:\n" + dumpingAgent("x", m, dump, fmt.Sprintf(`    env: {VISIBLE: plain}
    secrets:
      TOKEN: {keyring: x-token}
      API_KEY: {exec: [/bin/cat, %s]}
`, valueFile)))

	// Stored from standard input, with its newline dropped.
	r := w.runIn(fromKeyring+"\n", "secret", "set", "x", "TOKEN")
	if r.code != 0 || !strings.Contains(r.stdout, "tether/default") {
		t.Fatalf("secret set: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	ls := w.mustRun("secret", "ls", "x")
	for _, want := range []string{"TOKEN", `keyring "x-token"`, "yes", "API_KEY", "exec [/bin/cat"} {
		if !strings.Contains(ls.stdout, want) {
			t.Errorf("secret ls lacks %q:\n%s", want, ls.stdout)
		}
	}
	ws := *w
	ws.env = append(slices.Clone(w.env), "TETHER_TEST_HANDOVER_STOP=written")
	svc := ws.startService("default")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := w.client("default").Events(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	var stream strings.Builder
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		for ev, err := range events {
			if err != nil {
				return
			}
			b, _ := json.Marshal(ev)
			stream.Write(append(b, '\n'))
		}
	}()

	w.mustRun("start", "x")
	x := w.waitState("default", "x", api.StateRunning)
	env := agentEnv(t, dump)
	for _, want := range []string{"TOKEN=" + fromKeyring + "\n", "API_KEY=" + fromCommand + "\n", "VISIBLE=plain\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the agent's environment lacks %q:\n%s", want, env)
		}
	}
	// A restart reads them again.
	os.Remove(dump)
	w.mustRun("restart", "x")
	x2 := w.waitState("default", "x", api.StateRunning)
	if env := agentEnv(t, dump); !strings.Contains(env, "TOKEN="+fromKeyring+"\n") {
		t.Errorf("after a restart the agent lacks TOKEN:\n%s", env)
	}
	if x2.PID == x.PID {
		t.Errorf("restart kept pid %d", x.PID)
	}

	// The handover record of an upgrade, read while the service is
	// stopped at the step where it is written.
	record := handoverRecord(t, w, svc)
	w.waitState("default", "x", api.StateRunning)
	cancel()
	<-streamDone

	places := map[string]string{
		"secret ls":           ls.stdout + ls.stderr,
		"status --json":       w.mustRun("status", "--json").stdout,
		"status":              w.mustRun("status").stdout,
		"logs":                w.mustRun("logs", "x", "-n", "1000").stdout,
		"event stream":        stream.String(),
		"service output":      svc.output(),
		"the handover record": record,
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
		for _, s := range []string{fromKeyring, fromCommand} {
			if strings.Contains(text, s) {
				t.Errorf("a secret is in %s:\n%s", what, text)
			}
		}
	}
	for _, d := range []string{"state", "run", "config"} {
		_ = filepath.WalkDir(filepath.Join(w.dir, d), func(path string, de fs.DirEntry, err error) error {
			if err != nil || !de.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && (bytes.Contains(b, []byte(fromKeyring)) || bytes.Contains(b, []byte(fromCommand))) {
				t.Errorf("a secret is in %s", path)
			}
			return nil
		})
	}
}

// handoverRecord runs "tether service upgrade" on svc, started with
// TETHER_TEST_HANDOVER_STOP=written, reads the handover record from the
// service stopped where it has written it (a memfd of the process, or a
// file in the state directory), and lets the upgrade go on.
func handoverRecord(t *testing.T, w *world, svc *service) string {
	t.Helper()
	pid := svc.cmd.Process.Pid
	upgraded := make(chan result, 1)
	go func() { upgraded <- w.run(time.Minute, "service", "upgrade") }()
	if !waitStopped(pid, 30*time.Second) {
		t.Fatalf("the service never stopped at the written record:\n%s", svc.output())
	}
	var record []byte
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		path := fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())
		if l, _ := os.Readlink(path); strings.HasPrefix(l, "/memfd:handover.json") {
			record, _ = os.ReadFile(path)
		}
	}
	if record == nil {
		record, _ = os.ReadFile(filepath.Join(w.dir, "state", "tether", "default", "handover.json"))
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if r := <-upgraded; r.code != 0 {
		t.Fatalf("upgrade: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if !bytes.Contains(record, []byte(`"x"`)) {
		t.Fatalf("no handover record with agent x found: %q", record)
	}
	return string(record)
}

// A secret that cannot be read fails the start with code secret, naming
// the variable and its reference and why, never a value; nothing is
// started and nothing retries it. Once stored, a start runs the agent;
// when it later fails to be read at a restart by the agent's policy, the
// agent is failed with code secret at once: not a crash loop.
func TestSecretUnreadableFailsTheStart(t *testing.T) {
	w := newWorld(t)
	w.withKeyring()
	m := uniqueMarker()
	cleanupTrees(t, m)
	value := randomSecret(t)
	valueFile := filepath.Join(w.dir, "value")
	dump := filepath.Join(w.dir, "agent-env")
	w.writeConfig("agents:\n" + dumpingAgent("x", m, dump, `    secrets:
      TOKEN: {keyring: x-token}
`) + fmt.Sprintf(`  - id: y
    command: [/bin/sh, -c, 'sleep 0.5; exit 1', %s-y]
    restart: always
    autostart: false
    stop_timeout: 2s
    secrets:
      API_KEY: {exec: [/bin/sh, -c, 'cat "$0" || { echo "no such item in the vault" >&2; exit 2; }', %s]}
`, m, valueFile))
	w.startService("default")

	r := w.run(30*time.Second, "start", "x")
	if r.code != 1 || !strings.Contains(r.stderr, `secret TOKEN (keyring "x-token")`) || !strings.Contains(r.stderr, "tether secret set x TOKEN") {
		t.Errorf("start with no keychain entry: exit %d, stderr %q; want 1 naming TOKEN, its entry and how to store it", r.code, r.stderr)
	}
	row := w.waitState("default", "x", api.StateFailed)
	if row.Error == nil || row.Error.Code != api.CodeSecret {
		t.Fatalf("x failed with %+v, want code %s", row.Error, api.CodeSecret)
	}
	// Not retried: it stays failed, with no tree.
	if testproc.UntilEvery(2*time.Second, 50*time.Millisecond, func() bool {
		return w.status("default")["x"].State != api.StateFailed || len(sessionsOf(m)) != 0
	}) {
		t.Errorf("a failed secret was retried: %+v, trees %v", w.status("default")["x"], sessionsOf(m))
	}

	if r := w.runIn(value, "secret", "set", "x", "TOKEN"); r.code != 0 {
		t.Fatalf("secret set: exit %d: %s", r.code, r.stderr)
	}
	w.mustRun("start", "x")
	w.waitState("default", "x", api.StateRunning)
	if env := agentEnv(t, dump); !strings.Contains(env, "TOKEN="+value+"\n") {
		t.Errorf("the agent lacks TOKEN:\n%s", env)
	}

	// y's command can read its secret at the first start, not at the
	// restart after the agent exits.
	if err := os.WriteFile(valueFile, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	w.mustRun("start", "--no-wait", "y")
	if err := os.Remove(valueFile); err != nil {
		t.Fatal(err)
	}
	row = w.waitRow("default", "y", api.StateFailed, nil)
	if row.Error == nil || row.Error.Code != api.CodeSecret || !strings.Contains(row.Error.Message, "no such item in the vault") {
		t.Fatalf("y: %+v, want failed with code %s quoting its command's stderr", row.Error, api.CodeSecret)
	}
	for what, text := range map[string]string{"start": r.stdout + r.stderr, "x's row": fmt.Sprint(w.status("default")["x"]), "y's row": fmt.Sprint(row)} {
		if strings.Contains(text, value) {
			t.Errorf("%s quotes the secret: %s", what, text)
		}
	}
	// An id or a name that is not there is said so.
	if r := w.runIn(value, "secret", "set", "x", "NOPE"); r.code != 1 || !strings.Contains(r.stderr, "no secret NOPE") {
		t.Errorf("secret set of an unknown name: exit %d: %s", r.code, r.stderr)
	}
	if r := w.runIn(value, "secret", "set", "y", "API_KEY"); r.code != 1 || !strings.Contains(r.stderr, "read from a command") {
		t.Errorf("secret set of a command's secret: exit %d: %s", r.code, r.stderr)
	}
	if r := w.run(10*time.Second, "secret", "set", "x", "TOKEN", value); r.code != 2 {
		t.Errorf("secret set with the value as an argument: exit %d, want 2 (usage)", r.code)
	}
}

// The same as an unprivileged user, with the keyring, the service and
// the command line all that user's.
func TestSecretsAsAnUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "running as another user needs root")
	}
	uid, gid, err := usermanager.PickUser()
	if err != nil {
		testproc.SkipOrFail(t, "an unprivileged user: %v", err)
	}
	w := userWorld(t, uid, gid, asUser(uid, gid))
	w.withKeyring()
	m := uniqueMarker()
	cleanupTrees(t, m)
	value := randomSecret(t)
	dump := filepath.Join(w.dir, "agent-env")
	w.writeConfig("agents:\n" + dumpingAgent("x", m, dump, `    secrets:
      TOKEN: {keyring: x-token}
`))
	if err := os.Lchown(filepath.Dir(w.configPath()), uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(w.configPath(), uid, gid); err != nil {
		t.Fatal(err)
	}
	if r := w.runIn(value, "secret", "set", "x", "TOKEN"); r.code != 0 {
		t.Fatalf("secret set: exit %d: %s", r.code, r.stderr)
	}
	if ls := w.mustRun("secret", "ls", "x"); !strings.Contains(ls.stdout, "yes") || strings.Contains(ls.stdout, value) {
		t.Errorf("secret ls:\n%s", ls.stdout)
	}
	svc := w.startService("default")
	w.mustRun("start", "x")
	row := w.waitRow("default", "x", api.StateRunning, nil)
	if env := agentEnv(t, dump); !strings.Contains(env, "TOKEN="+value+"\n") {
		t.Errorf("the agent lacks TOKEN:\n%s", env)
	}
	if fi, err := os.Stat(fmt.Sprintf("/proc/%d", row.PID)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Errorf("the agent does not run as uid %d: %v", uid, err)
	}
	for what, text := range map[string]string{"service output": svc.output(), "status": w.mustRun("status", "--json").stdout} {
		if strings.Contains(text, value) {
			t.Errorf("the secret is in %s", what)
		}
	}
	_ = svc.cmd.Process.Signal(syscall.SIGTERM)
}

// On a terminal, tether secret set asks for the value and does not echo
// it: the terminal's output (what script(1) records of it) has the
// prompt and the answer, never the value typed.
func TestSecretSetOnATerminalDoesNotEcho(t *testing.T) {
	needTools(t, "script")
	w := newWorld(t)
	w.withKeyring()
	value := randomSecret(t)
	w.writeConfig("agents:\n" + dumpingAgent("x", uniqueMarker(), filepath.Join(w.dir, "dump"), `    secrets:
      TOKEN: {keyring: x-token}
`))
	// script(1) runs the command on a pseudo-terminal of its own and
	// passes its own standard input to it.
	cmd := exec.Command("script", "-qec", tether+" secret set x TOKEN", os.DevNull)
	cmd.Env = w.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var screen bytes.Buffer
	prompted := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		asked := false
		for {
			n, err := out.Read(buf)
			screen.Write(buf[:n])
			if !asked && strings.Contains(screen.String(), "(not shown): ") {
				asked = true
				close(prompted)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-prompted:
	case <-done:
	case <-time.After(30 * time.Second):
	}
	// Typed only once it asked: the terminal echoes what comes before.
	if _, err := stdin.Write([]byte(value + "\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	err = cmd.Wait()
	text := screen.String()
	if err != nil || !strings.Contains(text, "value of TOKEN for agent \"x\" (not shown): ") || !strings.Contains(text, "stored TOKEN") {
		t.Fatalf("secret set on a terminal: %v\n%s", err, text)
	}
	if strings.Contains(text, value) {
		t.Errorf("the terminal shows the value typed:\n%s", text)
	}
	if ls := w.mustRun("secret", "ls", "x"); !strings.Contains(ls.stdout, "yes") {
		t.Errorf("not stored:\n%s", ls.stdout)
	}
}
