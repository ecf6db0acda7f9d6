package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/internal/usermanager"
	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// escapingAgent is an agent whose tree escapes everything but its
// containment. It ignores SIGTERM, and so does what it starts. It starts
// an escapee that forks twice into a session of its own and closes every
// descriptor, the inherited lock among them, so neither the session nor
// the lock leads to it; and a tmux server, which daemonizes the same way
// and keeps none of the agent's descriptors, with a pane in a session of
// its own. $1 is the marker every process carries, $2 the tmux socket.
const escapingAgent = `#!/bin/bash
trap '' TERM
(setsid bash -c 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
	exec 0<&- 1>&- 2>&-; exec -a "$0-escapee" sleep 1000' "$1" &)
tmux -S "$2" new-session -d -s agent "exec -a $1-pane sleep 1000"
echo "agent $1 up"
exec -a "$1-agent" sleep 1000
`

// escapingTree is one live tree of escapingAgent, by role.
type escapingTree struct {
	agent, escapee, tmux, pane int
}

// escapingTreeOf finds the live tree marked with marker; ok says it is
// whole, one process of each role.
func escapingTreeOf(marker string) (tr escapingTree, ok bool) {
	count := 0
	for pid, c := range procsWith(marker) {
		count++
		switch {
		case strings.HasPrefix(c, marker+"-agent\x00"):
			tr.agent = pid
		case strings.HasPrefix(c, marker+"-escapee\x00"):
			tr.escapee = pid
		case strings.HasPrefix(c, marker+"-pane\x00"):
			tr.pane = pid
		case strings.HasPrefix(c, "tmux\x00"):
			tr.tmux = pid
		}
	}
	return tr, count == 4 && tr.agent > 0 && tr.escapee > 0 && tr.tmux > 0 && tr.pane > 0
}

func (tr escapingTree) pids() []int { return []int{tr.agent, tr.escapee, tr.tmux, tr.pane} }

// userWorld is a world whose service and command lines run as uid:gid
// through command, which starts a program as that user; env is added to
// the world's environment. Its directories are the user's.
func userWorld(t *testing.T, uid, gid int, command func(string, ...string) *exec.Cmd, env ...string) *world {
	t.Helper()
	w := newWorld(t)
	w.command, w.foreign = command, uid != os.Geteuid()
	if err := filepath.WalkDir(w.dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
	// The tether binary's directory is the test's, 0700: let the user in.
	if err := os.Chmod(filepath.Dir(tether), 0o755); err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "HOME=") {
			kept = append(kept, kv)
		}
	}
	w.env = append(append(kept, "HOME="+w.dir), env...)
	return w
}

// asUser returns a command function that starts programs as uid:gid, in
// the test's cgroup.
func asUser(uid, gid int) func(string, ...string) *exec.Cmd {
	return func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return cmd
	}
}

// waitRow waits until profile's agent id is in state, asking through the
// command line, and returns its row.
func (w *world) waitRow(profile, id string, state api.State, pred func(statusRow) bool) statusRow {
	w.t.Helper()
	var row statusRow
	if !testproc.UntilEvery(20*time.Second, 10*time.Millisecond, func() bool {
		var ok bool
		row, ok = w.status(profile)[id]
		return ok && row.State == state && (pred == nil || pred(row))
	}) {
		w.t.Fatalf("agent %s of %s never reached %s: %+v", id, profile, state, row)
	}
	return row
}

// beside watches, until stopped, for a moment when a process of an old
// tree lives beside a newer tree of the same marker: two trees of one
// identity. A new tree begins with an agent process (the script, or what
// it execs) that is not old's; every process of it starts no earlier, so
// a marked process that started before it belongs to an old tree, even
// one whose pid the test never saw (a fork of the old tmux server).
type beside struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen string
}

func watchBeside(marker string, old escapingTree) *beside {
	b := &beside{stop: make(chan struct{}), done: make(chan struct{})}
	isAgent := func(c string) bool {
		return strings.HasPrefix(c, marker+"-agent\x00") || strings.Contains(c, "\x00"+marker+"\x00")
	}
	go func() {
		defer close(b.done)
		for {
			select {
			case <-b.stop:
				return
			default:
			}
			procs := procsWith(marker)
			stats := map[int]punix.Proc{}
			newStart := uint64(0)
			for pid, c := range procs {
				p, err := punix.Stat(pid)
				if err != nil || p.Zombie() {
					continue
				}
				stats[pid] = p
				if isAgent(c) && pid != old.agent && (newStart == 0 || p.Start < newStart) {
					newStart = p.Start
				}
			}
			var olds []int
			for pid, p := range stats {
				if newStart != 0 && p.Start < newStart {
					olds = append(olds, pid)
				}
			}
			if len(olds) > 0 {
				b.mu.Lock()
				if b.seen == "" {
					b.seen = fmt.Sprintf("%v, started before the new tree, live beside it: %s", olds, describe(procs))
				}
				b.mu.Unlock()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return b
}

func (b *beside) end() string {
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen
}

// escapeeScenario runs escapingAgent in w and checks, whatever the
// containment rung, that it is the one the test expects (rung; inCgroup
// checks the agent's cgroup), that the escapee really escaped, and that
// when the guardian is SIGKILLed the whole old tree, escapee and tmux
// included, is stopped and never lives beside the new one; and that a
// stop, and a shutdown while a dead guardian's tree waits for the restart
// that would take it over, leave nothing behind.
func escapeeScenario(t *testing.T, w *world, marker, rung string, inCgroup func(t *testing.T, agent int)) {
	identity := marker + "@relay"
	needTools(t, "bash", "setsid", "sleep", "tmux")
	bash, _ := exec.LookPath("bash")
	script := filepath.Join(w.dir, "agent.sh")
	sock := filepath.Join(w.dir, "tmux")
	if err := os.WriteFile(script, []byte(escapingAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	const stop = time.Second
	w.writeConfig(fmt.Sprintf(`agents:
  - id: x
    identity: %s
    command: [%s, %s, %s, %s]
    restart: on-failure
    stop_timeout: %v
`, identity, bash, script, marker, sock, stop))
	if w.foreign {
		// The config is the user's too.
		uid, gid := ownerOf(t, w.dir)
		if err := os.Lchown(filepath.Dir(w.configPath()), uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(w.configPath(), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	svc := w.startService("default")
	w.mustRun("start", "x")
	row := w.waitRow("default", "x", api.StateRunning, nil)
	if got := w.containment("default", "x"); got != rung {
		t.Fatalf("containment %q, want %q; the agent's log:\n%s", got, rung, w.agentLog("x"))
	}
	old := waitEscapingTree(t, marker)
	checkEscaped(t, old)
	if inCgroup != nil {
		inCgroup(t, old.agent)
	}

	// The guardian dies: the next one (restart: on-failure) must not
	// start before everything of the old tree is gone.
	watch := watchBeside(marker, old)
	begin := time.Now()
	if err := unix.Kill(row.GuardianPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The next start waits for a backoff (1 s) too.
	waitDead(t, old.pids(), stop+time.Second+5*ownerGoneMargin, w)
	t.Logf("old tree (rung %s) gone %v after its guardian's SIGKILL", rung, time.Since(begin))
	w.waitRow("default", "x", api.StateRunning, func(r statusRow) bool { return r.PID != row.PID })
	waitEscapingTree(t, marker)
	if seen := watch.end(); seen != "" {
		t.Fatalf("two trees of one identity: %s", seen)
	}

	// A stop leaves nothing.
	w.mustRun("stop", "x")
	w.waitOwnerGone("default", marker, time.Now(), 5*time.Second)

	// Nor does a shutdown while a dead guardian's tree waits for the
	// restart that would take it over.
	w.mustRun("start", "x")
	row = w.waitRow("default", "x", api.StateRunning, nil)
	waitEscapingTree(t, marker)
	if err := unix.Kill(row.GuardianPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lost := w.waitRow("default", "x", api.StateBackoff, nil)
	if rung == "session" {
		// The service stopped the tree itself, and says whose it was.
		if lost.Error == nil || !strings.Contains(lost.Error.Message, fmt.Sprintf("came back to the service and were stopped (4 of %q", identity)) {
			t.Errorf("the lost guardian's error does not say what the service stopped: %+v", lost.Error)
		}
	}
	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.done:
	case <-time.After(stop + 20*time.Second):
		t.Fatalf("the service did not exit after SIGTERM:\n%s", svc.output())
	}
	w.waitOwnerGone("default", marker, time.Now(), 5*time.Second)
}

// containment is the CONTAINMENT column of agent id in profile's human
// status (status --json keeps to the command-line contract's keys).
func (w *world) containment(profile, id string) string {
	w.t.Helper()
	out := w.mustRun("--profile", profile, "status").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	col := slices.Index(strings.Fields(lines[0]), "CONTAINMENT")
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) > col && col >= 0 && f[0] == id {
			return f[col]
		}
	}
	w.t.Fatalf("no containment of %s in:\n%s", id, out)
	return ""
}

// ownerOf returns the owner of path.
func ownerOf(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid), int(st.Gid)
}

func (w *world) agentLog(id string) string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "state", "tether", "default", "logs", id+".log"))
	return string(b)
}

func waitEscapingTree(t *testing.T, marker string) escapingTree {
	t.Helper()
	var tr escapingTree
	if !testproc.UntilEvery(10*time.Second, 2*time.Millisecond, func() bool {
		var ok bool
		tr, ok = escapingTreeOf(marker)
		return ok
	}) {
		t.Fatalf("no whole tree of %s: %+v: %s", marker, tr, describe(procsWith(marker)))
	}
	return tr
}

// checkEscaped checks that the escapee and the tmux server really left:
// sessions of their own, not the agent's, and the escapee without a
// single descriptor.
func checkEscaped(t *testing.T, tr escapingTree) {
	t.Helper()
	agent, _ := punix.Stat(tr.agent)
	for _, pid := range []int{tr.escapee, tr.tmux, tr.pane} {
		p, err := punix.Stat(pid)
		if err != nil || p.Sid != pid || p.Sid == agent.Sid {
			t.Fatalf("pid %d is in session %d (the agent's is %d): %v", pid, p.Sid, agent.Sid, err)
		}
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(tr.escapee) + "/fd")
	if err != nil || len(fds) != 0 {
		t.Fatalf("the escapee %d has descriptors %v (%v)", tr.escapee, fds, err)
	}
}

// waitDead waits until none of pids lives.
func waitDead(t *testing.T, pids []int, within time.Duration, w *world) {
	t.Helper()
	var alive []int
	if !testproc.UntilEvery(within, 2*time.Millisecond, func() bool {
		alive = nil
		for _, pid := range pids {
			if p, err := punix.Stat(pid); err == nil && !p.Zombie() {
				alive = append(alive, pid)
			}
		}
		return len(alive) == 0
	}) {
		t.Fatalf("still alive %v after the guardian's SIGKILL: %v; the agent's log:\n%s", within, alive, w.agentLog("x"))
	}
}

// Rung 3: a service of an unprivileged user, with no cgroup it may write
// and no user manager. The descendants that leave the agent's session
// and close the lock come back to the service when their guardian dies,
// and it stops them before anything starts again.
func TestContainmentSessionEscapee(t *testing.T) {
	command := func(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		var err error
		if uid, gid, err = usermanager.PickUser(); err != nil {
			testproc.SkipOrFail(t, "an unprivileged user to run the service as: %v", err)
		}
		command = asUser(uid, gid)
	}
	if dir, err := punix.OwnCgroupDir(); err == nil && unix.Faccessat(unix.AT_FDCWD, dir, unix.W_OK, 0) == nil && uid == os.Geteuid() {
		testproc.SkipOrFail(t, "this user may write its cgroup %s: no rung 3 to test", dir)
	}
	m := uniqueMarker()
	cleanupTrees(t, m)
	w := userWorld(t, uid, gid, command)
	escapeeScenario(t, w, m, "session", nil)
}

// Rung 2: the same service under a real systemd user manager. The
// guardian is placed in a transient scope with Delegate=yes, the agent in
// a cgroup of its own inside it, and a dead guardian's tree is stopped
// through that cgroup; the scopes go with the trees.
func TestContainmentScopeEscapee(t *testing.T) {
	m := uniqueMarker()
	cleanupTrees(t, m)
	um := usermanager.Start(t, usermanager.Options{})
	w := userWorld(t, um.UID, um.GID, um.Command, "DBUS_SESSION_BUS_ADDRESS="+um.Bus())
	escapeeScenario(t, w, m, "scope", func(t *testing.T, agent int) {
		cg := cgroupOf(t, agent)
		scope := filepath.Dir(cg)
		if !strings.HasPrefix(cg, um.Cgroup+"/manager/") || !strings.HasSuffix(scope, ".scope") || !strings.HasPrefix(filepath.Base(cg), "tether-") {
			t.Fatalf("the agent's cgroup is %s, want tether-* in a scope of the manager below %s/manager", cg, um.Cgroup)
		}
		if out, err := um.Systemctl("is-active", filepath.Base(scope)); strings.TrimSpace(out) != "active" {
			t.Fatalf("%s: %q %v", filepath.Base(scope), out, err)
		}
	})
	// Every scope went with its tree.
	var (
		units string
		err   error
	)
	if !testproc.UntilEvery(10*time.Second, 10*time.Millisecond, func() bool {
		units, err = um.Systemctl("list-units", "--all", "--plain", "--no-legend", "tether-*")
		return err == nil && strings.TrimSpace(units) == ""
	}) {
		t.Fatalf("units left in the user manager: %s %v", units, err)
	}
}

// Rung 1: as root, with a writable cgroup of its own.
func TestContainmentCgroupEscapee(t *testing.T) {
	if os.Geteuid() != 0 {
		testproc.SkipOrFail(t, "a writable cgroup v2 needs root here")
	}
	if cg, err := punix.NewCgroup("tether-probe-" + uniqueMarker()); err != nil {
		testproc.SkipOrFail(t, "no writable cgroup v2: %v", err)
	} else {
		_ = cg.Remove()
	}
	m := uniqueMarker()
	t.Cleanup(func() {
		// What a failed run left; rmdir takes only empty ones.
		for _, cg := range agentCgroups(m + "@relay") {
			_ = os.Remove(cg)
		}
	})
	cleanupTrees(t, m)
	w := newWorld(t)
	// The service, and so its guardians, share the test's cgroup.
	own, _ := punix.OwnCgroupDir()
	escapeeScenario(t, w, m, "cgroup", func(t *testing.T, agent int) {
		if cg := cgroupOf(t, agent); filepath.Dir(cg) != own || !strings.HasPrefix(filepath.Base(cg), "tether-") {
			t.Fatalf("the agent's cgroup is %s, want a tether-* one in %s", cg, own)
		}
	})
}

// cgroupOf returns the directory of pid's cgroup v2.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	rel := func(cgroup string) string {
		for line := range strings.SplitSeq(cgroup, "\n") {
			if r, ok := strings.CutPrefix(line, "0::"); ok {
				return r
			}
		}
		t.Fatalf("no cgroup v2 line in %q", cgroup)
		return ""
	}
	own, err := punix.OwnCgroupDir()
	if err != nil {
		t.Fatal(err)
	}
	mount := own
	if self := rel(readProc(t, os.Getpid(), "cgroup")); self != "/" {
		mount = strings.TrimSuffix(own, self)
	}
	return filepath.Join(mount, rel(readProc(t, pid, "cgroup")))
}
