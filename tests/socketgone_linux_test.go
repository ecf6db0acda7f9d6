package tests

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"golang.org/x/sys/unix"
)

// A service whose socket file is removed while it runs makes it again at
// once, so it is never unreachable for good: after a delete, a rename
// away, and the removal of its whole directory. Where it cannot (its
// directory's path became a file), the command line says that the
// service runs but its socket is gone, naming its pid, and exits 3; a
// SIGHUP, once the path is free, makes the socket again.
func TestRemovedSocketIsMadeAgain(t *testing.T) {
	w := newWorld(t)
	m := uniqueMarker()
	cleanupTrees(t, m)
	w.writeConfig("agents:\n" + agentYAML("a", "a@relay", m, false))
	s := w.startService("default")
	sock := w.socket("default")
	dir := filepath.Dir(sock)
	reachable := func(what string) {
		t.Helper()
		var err error
		if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err = w.client("default").Status(ctx)
			return err == nil
		}) {
			t.Fatalf("after %s the service is unreachable: %v\n%s", what, err, s.output())
		}
	}
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	reachable("the socket's removal")
	if err := os.Rename(sock, sock+".moved"); err != nil {
		t.Fatal(err)
	}
	reachable("a rename of the socket")
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	reachable("a rename of the socket's directory")
	if got := strings.Count(s.output(), "listening on it again"); got != 3 {
		t.Errorf("the service log says %d times that it listens again, want 3:\n%s", got, s.output())
	}

	// A path it cannot take back: the directory and a file swap places
	// at once.
	file := dir + ".file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, file, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("exchanging %s and %s: %v", dir, file, err)
	}
	waitFileContains(t, s.log.Name(), "could not be made again")
	r := w.run(10*time.Second, "status")
	pid := strconv.Itoa(s.cmd.Process.Pid)
	if r.code != 3 || !strings.Contains(r.stderr, "service pid "+pid+" of profile \"default\" is running but its socket") || !strings.Contains(r.stderr, "kill -HUP "+pid) {
		t.Fatalf("status without a socket: exit %d, want 3 naming pid %s\n%s%s", r.code, pid, r.stdout, r.stderr)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	reachable("a SIGHUP")
}
