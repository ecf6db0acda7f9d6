//go:build unix

package unix

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
)

func TestDatagramSenderAndBarrier(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n")
	d, err := ListenDatagram(filepath.Join(dir, "notify"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fi, err := os.Stat(d.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v, %v", fi.Mode(), err)
	}
	// The sender is written as sd_notify(3) is: an unbound datagram
	// socket and sendmsg to the path.
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(s)
	to := &unix.SockaddrUnix{Name: d.Path()}
	// A barrier, as sd_notify_barrier sends it: one end of a pipe, which
	// the receiver must close so the sender's wait on the other ends.
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	if err := unix.Sendmsg(s, []byte("BARRIER=1"), unix.UnixRights(p[1]), to, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	buf := make([]byte, 64)
	n, from, trunc, err := d.Receive(buf)
	from.Close()
	if err != nil || string(buf[:n]) != "BARRIER=1" || trunc {
		t.Fatalf("Receive = %q, %v, %v", buf[:n], trunc, err)
	}
	if runtime.GOOS == "linux" && (from.PID != os.Getpid() || from.UID != os.Geteuid()) {
		t.Fatalf("sender = %+v, want pid %d uid %d", from, os.Getpid(), os.Geteuid())
	}
	// Every copy of the pipe's write end is closed: the read end sees EOF
	// at once instead of blocking.
	if n, err := unix.Read(p[0], buf); n != 0 || err != nil {
		t.Fatalf("read after the barrier = %d, %v; the passed descriptor was kept open", n, err)
	}

	if err := unix.Sendmsg(s, make([]byte, 100), nil, to, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, trunc, err := d.Receive(buf); err != nil || !trunc {
		t.Fatalf("a 100-byte datagram into 64 bytes: truncated=%v, %v", trunc, err)
	}

	path := d.Path()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket left after Close: %v", err)
	}
}

func TestDatagramRefusesAnotherFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "notify")
	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenDatagram(path); err == nil {
		t.Fatal("bound over a regular file")
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatalf("the file was changed: %q", b)
	}
}

func init() {
	// dgram-send PATH MESSAGE sends MESSAGE to the datagram socket at
	// PATH and exits.
	testproc.Register("dgram-send", func(args []string) int {
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return 1
		}
		if unix.Sendto(s, []byte(args[1]), 0, &unix.SockaddrUnix{Name: args[0]}) != nil {
			return 1
		}
		return 0
	})
}

// A sender that exited, and was reaped, before its datagram is read is
// known to have exited; a live one is not.
func TestDatagramSenderExited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: only Linux attaches the sender's credentials")
	}
	d, err := ListenDatagram(filepath.Join(t.TempDir(), "n", "notify"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cmd := testproc.Command("dgram-send", d.Path(), "READY=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dgram-send: %v\n%s", err, out)
	}
	buf := make([]byte, 64)
	n, from, _, err := d.Receive(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("Receive = %q, %v", buf[:n], err)
	}
	if from.PID != cmd.Process.Pid || !from.Exited() {
		t.Errorf("sender %+v (exited %v), want pid %d, exited", from, from.Exited(), cmd.Process.Pid)
	}
	if from.pidfd < 0 {
		t.Logf("no SCM_PIDFD on this kernel: the pid alone names the sender")
	}
	from.Close()

	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(s)
	if err := unix.Sendto(s, []byte("STATUS=x"), 0, &unix.SockaddrUnix{Name: d.Path()}); err != nil {
		t.Fatal(err)
	}
	_, from, _, err = d.Receive(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	if from.PID != os.Getpid() || from.Exited() {
		t.Errorf("sender %+v (exited %v), want this live process %d", from, from.Exited(), os.Getpid())
	}
}
