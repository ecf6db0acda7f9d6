package guardian

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sys "golang.org/x/sys/unix"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
)

// setUpTestProcess adopts the guardians of owners the tests kill here,
// rather than leaving them to an init that may not reap them.
func setUpTestProcess() error {
	_, err := punix.BecomeSubreaper()
	return err
}

func runHelper(args []string) int {
	role := args[0]
	term := make(chan os.Signal, 1)
	switch role {
	case "polite", "polite-closer":
		// Leader of a three-process tree: a worker in its own process
		// group and a double-forked escapee in its own session.
		signal.Notify(term, syscall.SIGTERM)
		if role == "polite-closer" {
			sys.Close(3) // drop the inherited lock descriptor
		}
		child := "sleeper"
		if role == "polite-closer" {
			child = "closer"
		}
		spawnSelf(child, &syscall.SysProcAttr{Setpgid: true}, true)
		// The middle of the double fork exits at once; reap it before
		// announcing, so it is not a zombie that outlives the test.
		runSelf("escape-" + child)
		announce("leader")
		<-term
		return 0
	case "sleeper", "closer":
		if role == "closer" {
			sys.Close(3)
		}
		signal.Notify(term, syscall.SIGTERM)
		announce(role)
		<-term
		return 0
	case "escape-sleeper", "escape-closer":
		spawnSelf(strings.TrimPrefix(role, "escape-"), &syscall.SysProcAttr{Setsid: true}, false)
		return 0
	case "stubborn":
		// Ignores SIGTERM, and so does its worker.
		signal.Ignore(syscall.SIGTERM)
		spawnSelf("stubborn-worker", &syscall.SysProcAttr{Setpgid: true}, true)
		announce("leader")
		select {}
	case "stubborn-worker":
		signal.Ignore(syscall.SIGTERM)
		announce("worker")
		select {}
	case "exit":
		code, _ := strconv.Atoi(args[1])
		return code
	case "env":
		// Writes its environment and then waits for SIGTERM.
		signal.Notify(term, syscall.SIGTERM)
		_ = os.WriteFile(filepath.Join(os.Getenv("HELPER_DIR"), "env"), []byte(strings.Join(os.Environ(), "\n")), 0o600)
		announce("leader")
		<-term
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper role", role)
	return 2
}

func runSelf(role string) {
	cmd := testproc.Command("helper", role)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
}

func spawnSelf(role string, attr *syscall.SysProcAttr, wait bool) {
	cmd := testproc.Command("helper", role)
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	if wait {
		go func() { _ = cmd.Wait() }()
	}
}

// reapAdopted reaps zombies that were reparented to this process (the
// test binary is a subreaper) and are not children any exec.Cmd waits on.
func reapAdopted() {
	procs, _ := punix.Processes()
	self := os.Getpid()
	for _, p := range procs {
		if p.PPid == self && p.Zombie() && adopted(p.Pid) {
			var ws sys.WaitStatus
			_, _ = sys.Wait4(p.Pid, &ws, sys.WNOHANG, nil)
		}
	}
}

// adopted tells an orphan reparented here from a child this process
// started: the start time of an adopted orphan is not in childStarts.
// Orphans here are always guardians whose owner process was killed, and
// their status is never waited for by anyone else.
func adopted(pid int) bool {
	adoptedMu.Lock()
	defer adoptedMu.Unlock()
	return adoptedPIDs[pid]
}

// expectAdopted records that pid will be reparented here.
func expectAdopted(pid int) {
	adoptedMu.Lock()
	defer adoptedMu.Unlock()
	adoptedPIDs[pid] = true
}

func lockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := punix.OpenLockFile(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer f.Close()
	if err := punix.TryLock(f); err != nil {
		return false
	}
	_ = punix.Unlock(f)
	return true
}

// agentPath is the PATH helper agents get.
const agentPath = "PATH=/usr/bin:/bin"

func refOf(pid int) (procRef, error) {
	p, err := punix.Stat(pid)
	if err != nil {
		return procRef{}, err
	}
	return p.Ref(), nil
}

func isAlive(r procRef) bool { return punix.Alive(r) }

// stopOrphan asks a guardian whose owner was killed to finish, in case it
// has not: continued first, if a test stopped it.
func stopOrphan(pid int) {
	if p, err := punix.Stat(pid); err == nil && !p.Zombie() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}
