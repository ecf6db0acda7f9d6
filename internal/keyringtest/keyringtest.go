//go:build linux

// Package keyringtest runs a real Secret Service for tests: GNOME
// Keyring's gnome-keyring-daemon on a private session bus of its own
// (dbus-run-session), its login keyring created and unlocked with a
// password given on its standard input, the way a login's PAM module
// unlocks it, with its files in a directory of the test's. The test's
// processes reach it through the bus address in Env. Everything it
// started is gone when the test ends, whether it passed or not. Only
// tests import it.
package keyringtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// Password unlocks the test's login keyring.
const Password = "tether-test"

// startWithin bounds the wait for the bus and the daemon; stopWithin the
// wait for them to be gone once the session ends.
const (
	startWithin = 30 * time.Second
	stopWithin  = 10 * time.Second
)

// markerVar marks every process of a keyring in its environment, so
// that the cleanup finds the daemon, which leaves its parent.
const markerVar = "TETHER_KEYRINGTEST"

// script unlocks the keyring (its password on the daemon's standard
// input), stores an item in it (so that the login keyring is made and
// answers before a test's first request), writes the bus address to $1
// and holds the session open until its standard input closes.
const script = `eval "$(printf '%s' "$2" | gnome-keyring-daemon --unlock --components=secrets)" || exit 1
printf ready | secret-tool store --label=ready keyringtest ready || exit 1
printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" > "$1.tmp" && mv "$1.tmp" "$1" || exit 1
exec cat >/dev/null
`

// Options say whose keyring it is.
type Options struct {
	// Command starts a program as the keyring's user; nil: exec.Command.
	Command func(name string, args ...string) *exec.Cmd
	// Dir holds the keyring's files and runtime directory; it must be
	// the user's. Empty: a temporary directory of the test's.
	Dir string
	// Env is the environment to start from; nil: the test's. Its
	// DBUS_SESSION_BUS_ADDRESS, HOME and XDG_ variables are replaced.
	Env []string
}

// Keyring is a running Secret Service.
type Keyring struct {
	// Address is its session bus's.
	Address string
	// Env is Options.Env with the bus address: what a process that
	// uses the keyring is started with.
	Env []string
}

// Skip skips t when a tool is missing, and fails it under CI=true.
func Skip(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon", "secret-tool", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true: the keyring tests need %s (Debian's dbus, gnome-keyring and libsecret-tools): %v", tool, err)
			}
			t.Skipf("SKIP: the keyring tests need %s (apt-get install dbus gnome-keyring libsecret-tools)", tool)
		}
	}
}

// Start starts a keyring for the length of t.
func Start(t testing.TB, opts Options) *Keyring {
	t.Helper()
	Skip(t)
	if opts.Command == nil {
		opts.Command = exec.Command
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	var m [8]byte
	if _, err := rand.Read(m[:]); err != nil {
		t.Fatal(err)
	}
	marker := markerVar + "=" + hex.EncodeToString(m[:])
	var env []string
	for _, kv := range opts.Env {
		if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") && !strings.HasPrefix(kv, "HOME=") &&
			!strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, markerVar+"=") {
			env = append(env, kv)
		}
	}
	home := filepath.Join(opts.Dir, "keyring")
	runtime := filepath.Join(home, "run")
	mkdirs := opts.Command("mkdir", "-m", "700", "-p", filepath.Join(home, "data"), runtime)
	if out, err := mkdirs.CombinedOutput(); err != nil {
		t.Fatalf("keyring directories: %v\n%s", err, out)
	}
	addrFile := filepath.Join(home, "address")
	env = append(env, "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_RUNTIME_DIR="+runtime)
	cmd := opts.Command("dbus-run-session", "--", "sh", "-c", script, "keyring", addrFile, Password)
	cmd.Env = append(env, marker)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: the daemon inherits it, and may outlive the
	// session until the cleanup ends it.
	logPath := filepath.Join(home, "session.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-run-session: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	output := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	t.Cleanup(func() { stop(t, cmd, stdin, done, marker, output) })

	deadline := time.Now().Add(startWithin)
	var addr []byte
	for {
		addr, err = os.ReadFile(addrFile)
		if err == nil && len(addr) > 0 {
			break
		}
		select {
		case <-done:
			t.Fatalf("the keyring's session ended at start: %s", output())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no keyring within %v: %s", startWithin, output())
		}
	}
	k := &Keyring{Address: strings.TrimSpace(string(addr))}
	for _, kv := range opts.Env {
		if !strings.HasPrefix(kv, "DBUS_SESSION_BUS_ADDRESS=") {
			k.Env = append(k.Env, kv)
		}
	}
	k.Env = append(k.Env, "DBUS_SESSION_BUS_ADDRESS="+k.Address)
	return k
}

// stop ends the session (its cat reads end of file), which ends the bus;
// the daemon, which does not always end with its bus, is sent SIGTERM,
// and whatever of it is still there after stopWithin is killed, and the
// test fails.
func stop(t testing.TB, cmd *exec.Cmd, stdin io.Closer, done chan struct{}, marker string, output func() string) {
	stdin.Close()
	select {
	case <-done:
	case <-time.After(stopWithin):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("the keyring's session did not end within %v: %s", stopWithin, output())
	}
	for _, pid := range marked(marker) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	var left []int
	if testproc.UntilEvery(stopWithin, 10*time.Millisecond, func() bool { left = marked(marker); return len(left) == 0 }) {
		return
	}
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("processes of the keyring outlived SIGTERM by %v: %v (killed)", stopWithin, left)
}

// marked lists the live processes whose environment holds marker.
func marked(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if kv == marker {
				if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !zombie(st) {
					out = append(out, pid)
				}
				break
			}
		}
	}
	return out
}

// zombie reports whether a /proc/PID/stat line is a zombie's.
func zombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}
