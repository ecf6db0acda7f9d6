package tests

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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

// The test binary doubles as the squatter of
// TestClientRefusesAnotherUsersService: the helper "squat SOCKET LOG"
// listens on SOCKET (mode 0777), announces "ready", and for each
// connection appends to LOG how many bytes the client sent before
// closing, until its stdin closes.
func init() {
	testproc.Register("squat", func(args []string) int { return squat(args[0], args[1]) })
}

func squat(sock, logPath string) int {
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				fmt.Fprintf(f, "connection: %d bytes\n", n)
				f.Close()
			}
		}
	}()
	if err := testproc.Announce("ready"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// The client checks whom it talks to before it sends anything (I5, the
// client's half). With XDG_RUNTIME_DIR unset the socket is in
// /tmp/tether-<uid>, which any user may create first. Played for real:
// the victim is the command line run as an unused uid, the squatter a
// process of uid 65534.
//
//   - The squatter made the directory: the client refuses it, naming its
//     owner, and never connects.
//   - The directory is the victim's, but the process listening on the
//     socket in it is the squatter's: the client connects, sees the
//     listener's uid (SO_PEERCRED), refuses naming it, and sends nothing.
//   - The socket is there but not the victim's to connect to (EACCES):
//     exit 3 with the reason.
func TestClientRefusesAnotherUsersService(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "playing two other users needs root (uid %d)", os.Geteuid())
	}
	const squatter = 65534
	var victim int
	var runDir string
	for range 20 {
		victim = 40000 + rand.IntN(20000)
		runDir = fmt.Sprintf("/tmp/tether-%d", victim)
		if _, err := os.Lstat(runDir); os.IsNotExist(err) {
			break
		}
		runDir = ""
	}
	if runDir == "" {
		t.Fatal("no free /tmp/tether-<uid> for an unused uid")
	}
	t.Cleanup(func() { os.RemoveAll(runDir) })

	// Programs both users can run, and a home for the victim.
	bin, err := os.MkdirTemp("", "tt-squat-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyExe := func(from, name string) string {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(bin, name)
		if err := os.WriteFile(to, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return to
	}
	victimTether := copyExe(tether, "tether")
	squatterExe := copyExe(self, "tests.test")
	home := filepath.Join(bin, "home")
	for _, d := range []string{home, filepath.Join(home, "config"), filepath.Join(home, "state")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, victim, victim); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	squatLog := filepath.Join(bin, "squat.log")
	if err := os.WriteFile(squatLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(squatLog, 0o666); err != nil {
		t.Fatal(err)
	}

	// The squatter's directory, open for the victim to reach it.
	if err := os.Mkdir(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(runDir, squatter, squatter); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(runDir, "default.sock")
	rp := testproc.NewReady(t)
	sq := testproc.Command("squat", sock, squatLog)
	sq.Path = squatterExe
	rp.Pass(sq)
	sq.Dir = "/"
	sq.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: squatter, Gid: squatter}}
	stdin, err := sq.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	sq.Stderr = os.Stderr
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	squatDone := make(chan struct{})
	go func() { _ = sq.Wait(); close(squatDone) }()
	stopSquatter := func() {
		stdin.Close()
		select {
		case <-squatDone:
		case <-time.After(10 * time.Second):
			_ = sq.Process.Kill()
			<-squatDone
		}
	}
	t.Cleanup(stopSquatter)
	if line, err := rp.Line(10 * time.Second); err != nil || line != "ready" {
		t.Fatalf("the squatter never listened: %q, %v", line, err)
	}

	asVictim := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(victimTether, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(victim), Gid: uint32(victim)}}
		out, errb, err := runBounded(t, cmd, 30*time.Second)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code, out, errb}
	}
	sent := func() string {
		b, _ := os.ReadFile(squatLog)
		return string(b)
	}
	refused := func(what string, r result) {
		t.Helper()
		if r.code != 3 || !strings.Contains(r.stderr, "uid "+strconv.Itoa(squatter)) {
			t.Errorf("%s: exit %d, want 3 with a message naming uid %d\n%s%s", what, r.code, squatter, r.stdout, r.stderr)
		}
	}

	// 1. The squatter's directory.
	refused("status, squatted directory", asVictim("status"))
	refused("start, squatted directory", asVictim("start", "a"))
	if s := sent(); s != "" {
		t.Errorf("the client connected to a squatted directory's socket: %q", s)
	}

	// 2. The victim's directory, the squatter's listener in it.
	if err := os.Chown(runDir, victim, victim); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	refused("status, squatted listener", asVictim("status"))
	refused("start, squatted listener", asVictim("start", "a"))
	// The squatter notes each connection once the client has closed it.
	want := "connection: 0 bytes\nconnection: 0 bytes\n"
	testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool { return sent() == want })
	if s := sent(); s != want {
		t.Errorf("what the squatter got: %q, want two connections and nothing sent", s)
	}
	stopSquatter()

	// 3. A socket the victim may not connect to.
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	r := asVictim("status")
	if r.code != 3 || !strings.Contains(r.stderr, "permission denied") {
		t.Errorf("status on a socket it may not use: exit %d, want 3 with the reason\n%s%s", r.code, r.stdout, r.stderr)
	}
}
