package tests

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/service/state"
	"golang.org/x/sys/unix"
)

// needTools skips (or, on CI, fails) a test when a program it runs is
// missing.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			testproc.SkipOrFail(t, "%s not found: %v", n, err)
		}
	}
}

// uniqueMarker returns a string to put on the command lines of one test's
// agent trees. It is random and of fixed length, so no marker is a prefix
// of another, whatever ran before or runs beside this test.
func uniqueMarker() string {
	return fmt.Sprintf("tether-e2e-%016x", rand.Uint64())
}

// cmdline is the command line of a process as /proc shows it: the
// arguments, each followed by a NUL. It is empty for a zombie.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return string(b)
}

// procsWith returns the live (not zombie) processes whose command line
// contains s, with their command lines.
func procsWith(s string) map[int]string {
	procs, _ := punix.Processes()
	out := map[int]string{}
	for _, p := range procs {
		if p.Zombie() || p.Pid == os.Getpid() {
			continue
		}
		if c := cmdline(p.Pid); strings.Contains(c, s) {
			out[p.Pid] = c
		}
	}
	return out
}

// describe lists processes as procsWith returns them, for messages.
func describe(procs map[int]string) string {
	pids := slices.Sorted(maps.Keys(procs))
	var b strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&b, "\n\t%d: %s", pid, strings.TrimSpace(strings.ReplaceAll(procs[pid], "\x00", " ")))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// killMarked SIGKILLs every live process whose command line contains
// marker: the cleanup of trees a failed test left behind.
func killMarked(marker string) {
	for pid := range procsWith(marker) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// reapAdopted waits, up to within, for the children this process adopted
// as a child subreaper (TestMain makes it one): guardians whose service was
// killed, and anything they left. Those run in sessions of their own; the
// processes a test starts itself stay in the test's session and are waited
// for by their exec.Cmd, so they are never taken here. It reports whether
// none is left.
func reapAdopted(within time.Duration) (left []int) {
	self := os.Getpid()
	sid, _ := unix.Getsid(0)
	testproc.UntilEvery(within, 2*time.Millisecond, func() bool {
		left = left[:0]
		procs, _ := punix.Processes()
		for _, p := range procs {
			if p.PPid != self || p.Sid == sid {
				continue
			}
			if p.Zombie() {
				var ws unix.WaitStatus
				if got, _ := unix.Wait4(p.Pid, &ws, unix.WNOHANG, nil); got == p.Pid {
					continue
				}
			}
			left = append(left, p.Pid)
		}
		return len(left) == 0
	})
	return left
}

// cleanupTrees makes sure, at the end of t, that nothing of the trees
// marked with marker survives and every adopted process is reaped. It is
// the safety net of a test that fails half-way; a passing test has
// already checked that there is nothing left to do.
func cleanupTrees(t *testing.T, marker string) {
	t.Cleanup(func() {
		testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
			if len(procsWith(marker)) == 0 {
				return true
			}
			killMarked(marker)
			return false
		})
		if left := reapAdopted(10 * time.Second); len(left) > 0 {
			t.Errorf("adopted processes never exited: %v", left)
		}
	})
}

// heldLocks returns the identity locks under the world's lock directory
// that someone holds: an exclusive non-blocking flock on each fails.
func (w *world) heldLocks() []string {
	w.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(w.dir, "state", "tether", "locks", "*.lock"))
	var held []string
	for _, p := range paths {
		f, err := punix.OpenLockFile(p)
		if w.foreign {
			// OpenLockFile refuses a file of another user.
			f, err = os.OpenFile(p, os.O_RDWR|unix.O_NOFOLLOW, 0)
		}
		if err != nil {
			held = append(held, fmt.Sprintf("%s (%v)", p, err))
			continue
		}
		if err := punix.TryLock(f); err != nil {
			held = append(held, fmt.Sprintf("%s (%v)", p, err))
		} else {
			_ = punix.Unlock(f)
		}
		f.Close()
	}
	return held
}

// agentCgroups returns the cgroups that guardians made for identities and
// that are still there (none where guardians make no cgroups).
func agentCgroups(identities ...string) []string {
	dir, err := punix.OwnCgroupDir()
	if err != nil {
		return nil
	}
	var out []string
	for _, id := range identities {
		m, _ := filepath.Glob(filepath.Join(dir, "tether-"+guardian.Key(id)+"-*"))
		out = append(out, m...)
	}
	return out
}

// privateDirs returns what is left below profile's private root: its
// private directories and anything else but the identities' own
// directories (see guardian.Leftovers).
func (w *world) privateDirs(profile string) []string {
	root := filepath.Join(w.dir, "state", "tether", profile, "private")
	left, err := guardian.Leftovers(root)
	if err != nil {
		w.t.Errorf("listing %s: %v", root, err)
	}
	return left
}

// waitOwnerGone waits, up to within, until nothing of the trees marked
// with marker lives, profile has no private directory left and every lock
// is free: what I2 promises after the owner's death. It returns how long
// that took and fails the test with what was left otherwise.
func (w *world) waitOwnerGone(profile, marker string, begin time.Time, within time.Duration) time.Duration {
	w.t.Helper()
	var procs map[int]string
	var dirs, locks []string
	if !testproc.UntilEvery(time.Until(begin.Add(within)), 2*time.Millisecond, func() bool {
		procs, dirs, locks = procsWith(marker), w.privateDirs(profile), w.heldLocks()
		return len(procs) == 0 && len(dirs) == 0 && len(locks) == 0
	}) {
		w.t.Fatalf("%v after the owner died: survivors %s, private dirs %v, held locks %v", within, describe(procs), dirs, locks)
	}
	return time.Since(begin)
}

// readProc returns /proc/<pid>/<file> with its NULs as newlines.
func readProc(t *testing.T, pid int, file string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatalf("reading /proc/%d/%s: %v", pid, file, err)
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{'\n'}))
}

// testRand returns a generator whose seed the test prints, and takes
// from TETHER_E2E_SEED when set, so a failing run can be replayed.
func testRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("TETHER_E2E_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TETHER_E2E_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay with TETHER_E2E_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// intent reads whether the durable state of profile says id is enabled
// (absent: not recorded).
func (w *world) intent(profile, id string) (enabled, recorded bool) {
	w.t.Helper()
	st, err := state.Read(filepath.Join(w.dir, "state", "tether", profile))
	if err != nil {
		w.t.Fatalf("the state of profile %s: %v", profile, err)
	}
	a, ok := st.Agents[id]
	return a.Enabled, ok
}

func (w *world) mustRun(args ...string) result {
	w.t.Helper()
	r := w.run(30*time.Second, args...)
	if r.code != 0 {
		w.t.Fatalf("tether %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// runBounded runs cmd, which a test built, to its end or until within
// has passed (then it kills it and fails the test), and returns its
// output. The process is killed and waited for even if the test fails
// before that.
func runBounded(t *testing.T, cmd *exec.Cmd, within time.Duration) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(within):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not finish within %v\n%s%s", cmd.Path, within, out.String(), errb.String())
	}
	return out.String(), errb.String(), err
}

// waitFileContains waits until the file at path contains s.
func waitFileContains(t *testing.T, path, s string) {
	t.Helper()
	var b []byte
	var err error
	if !testproc.UntilEvery(10*time.Second, 5*time.Millisecond, func() bool {
		b, err = os.ReadFile(path)
		return err == nil && strings.Contains(string(b), s)
	}) {
		t.Fatalf("%s never contained %q: %v\n%s", path, s, err, b)
	}
}
