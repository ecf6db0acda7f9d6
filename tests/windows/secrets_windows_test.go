package windows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
)

// tokenEnv names the file the helper "token" writes its TOKEN to.
const tokenEnv = "TETHER_WIN_E2E_TOKEN"

func init() {
	testproc.Register("token", func([]string) int {
		path := os.Getenv(tokenEnv)
		if err := os.WriteFile(path+".tmp", []byte(os.Getenv("TOKEN")), 0o600); err != nil {
			return 1
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return 1
		}
		time.Sleep(agentLife)
		return 0
	})
}

// A secret stored with tether secret set (the value on standard input)
// in the Windows Credential Manager (Wine's) reaches the agent through
// its service and guardian, and tether secret ls names it, not its value.
func TestSecretsWindows(t *testing.T) {
	w := newWorld(t)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	key, value := "e2e-"+hex.EncodeToString(b[:]), "s3cret-"+hex.EncodeToString(b[:])
	p := w.profile("secret")
	t.Cleanup(func() { _ = keyring.Delete("tether/"+p, key) })
	tokenFile := w.pids + ".token"
	testproc.Used("token") // started by the service, from the config
	cfg := fmt.Sprintf(`agents:
  - id: probe
    identity: %s
    command: ['%s', token]
    env: {%s: '%s'}
    secrets: {TOKEN: {keyring: %s}}
    autostart: false
    restart: never
    stop_timeout: 1s
`, w.identity, testproc.Executable(), tokenEnv, tokenFile, key)
	if err := os.WriteFile(w.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := exec.CommandContext(ctx, w.exe, w.args("--profile", p, "secret", "set", "probe", "TOKEN")...)
	set.Env, set.Stdin = w.env, strings.NewReader(value+"\r\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	if code, out := w.run("--profile", p, "secret", "ls", "probe"); code != 0 || !strings.Contains(out, "yes") || strings.Contains(out, value) {
		t.Fatalf("secret ls: exit %d\n%s", code, out)
	}
	svc := w.startService(p)
	if code, out := w.run("--profile", p, "start", "probe"); code != 0 {
		t.Fatalf("start: exit %d\n%s\nservice log:\n%s", code, out, w.serviceLog(p))
	}
	var got []byte
	if !testproc.UntilEvery(30*time.Second, 50*time.Millisecond, func() bool {
		got, _ = os.ReadFile(tokenFile)
		return len(got) > 0
	}) {
		t.Fatalf("the agent never wrote its TOKEN; row %+v", svc.row(t, "probe"))
	}
	if string(got) != value {
		t.Errorf("the agent's TOKEN is %q, want %q", got, value)
	}
	if row := svc.row(t, "probe"); row.State != api.StateRunning || strings.Contains(fmt.Sprint(row), value) {
		t.Errorf("row %+v", row)
	}
	if strings.Contains(w.serviceLog(p), value) {
		t.Errorf("the service's log holds the secret")
	}
	svc.quit(t)
}
