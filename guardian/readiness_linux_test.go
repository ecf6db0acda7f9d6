package guardian

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/probe"
	"github.com/tether-dev/tether/wire"
	"golang.org/x/sys/unix"
)

// readyEnv is a test world whose agents are real programs: sh scripts,
// systemd-notify and python3's http.server.
func init() {
	// notify-send MESSAGE sends MESSAGE to $NOTIFY_SOCKET from its own
	// pid and exits.
	testproc.Register("notify-send", func(args []string) int {
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return 1
		}
		if err := unix.Sendto(s, []byte(args[0]), 0, &unix.SockaddrUnix{Name: os.Getenv("NOTIFY_SOCKET")}); err != nil {
			fmt.Fprintln(os.Stderr, "notify-send:", err)
			return 1
		}
		return 0
	})
}

func readyEnv(t *testing.T, need ...string) *world {
	t.Helper()
	for _, cmd := range need {
		if _, err := exec.LookPath(cmd); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI=true: a missing tool is a failure)", cmd)
			}
			t.Skipf("SKIP: %s is not installed", cmd)
		}
	}
	return newWorld(t)
}

// script is a spec whose agent is sh -c script, with readiness r.
func (e *world) script(identity, script string, r *Readiness) Spec {
	spec := e.spec(identity)
	spec.Argv = []string{"sh", "-c", script}
	if r != nil && r.Ready != nil && r.Ready.Kind == probe.KindNotify && r.NotifyDir == "" {
		// Socket paths are short; the test's temp dir may not be.
		dir, err := os.MkdirTemp("", "tn")
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { os.RemoveAll(dir) })
		r.NotifyDir = filepath.Join(dir, "n")
	}
	spec.Readiness = r
	return spec
}

func TestReadyNotifyWithSystemdNotify(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	spec := e.script("notify@ready", `sleep 0.2; systemd-notify --ready --status="serving 3 sessions"; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}})
	begin := time.Now()
	s := e.start(spec)
	if !s.Ready().Pending {
		t.Fatal("ready.pending is false for an agent with a readiness check")
	}
	// Read while the shell runs its first command: an exec in progress
	// shows an empty environment.
	notify := agentEnviron(t, s.Ready().AgentPID)["NOTIFY_SOCKET"]
	if filepath.Dir(notify) != spec.Readiness.NotifyDir {
		t.Fatalf("NOTIFY_SOCKET=%q, want a socket in %s", notify, spec.Readiness.NotifyDir)
	}
	ev := nextEvent(t, e, s, 10*time.Second)
	if ev.Type != EventStatus || ev.Status != "serving 3 sessions" {
		t.Fatalf("first event %+v, want the status", ev)
	}
	ev = nextEvent(t, e, s, 10*time.Second)
	if ev.Type != EventAgentReady || ev.Status != "serving 3 sessions" {
		t.Fatalf("second event %+v, want agent_ready with the status", ev)
	}
	if d := time.Since(begin); d < 200*time.Millisecond {
		t.Fatalf("ready after %v, before the agent said so", d)
	}
	if fi, err := os.Stat(notify); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("notify socket %s: %v, %v", notify, fi, err)
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if !gone(notify) {
		t.Errorf("notify socket %s left after the stop", notify)
	}
}

// A process outside the agent's tree cannot speak for it: its READY=1 is
// dropped, while the agent's own later message is taken.
func TestReadyNotifyIgnoresOutsiders(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	goFile := filepath.Join(e.helper, "go")
	spec := e.script("notify@outsider",
		`while [ ! -e "$HELPER_DIR/go" ]; do sleep 0.01; done; systemd-notify --status=mine; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}})
	s := e.start(spec)
	sock := agentEnviron(t, s.Ready().AgentPID)["NOTIFY_SOCKET"]
	if sock == "" {
		t.Fatal("the agent has no NOTIFY_SOCKET")
	}
	sendNotify(t, sock, "READY=1\nSTATUS=forged")
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, e, s, 10*time.Second)
	if ev.Type != EventStatus || ev.Status != "mine" {
		t.Fatalf("first event %+v, want the agent's own status; the outsider's datagram came first and must be dropped", ev)
	}
	if !strings.Contains(e.log(), "not in the agent's tree") {
		t.Errorf("the dropped datagram is not logged:\n%s", e.log())
	}
}

func TestReadyNotifyTimesOut(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	spec := e.script("notify@late", `systemd-notify --status="loading the model"; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}, StartTimeout: wire.Duration(1500 * time.Millisecond)})
	begin := time.Now()
	s := e.start(spec)
	agent, _ := refOf(s.Ready().AgentPID)
	if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventStatus {
		t.Fatalf("event %+v, want the status", ev)
	}
	ev := expectStopped(t, e, s, wire.ReasonNotReady, 10*time.Second)
	if d := time.Since(begin); d < 1500*time.Millisecond {
		t.Errorf("not_ready after %v, before the start timeout", d)
	}
	if !strings.Contains(ev.Detail, "1.5s") || !strings.Contains(ev.Detail, "loading the model") {
		t.Errorf("detail %q does not say the timeout and the last status", ev.Detail)
	}
	waitGone(t, []procRef{agent}, 100*time.Millisecond)
}

func TestReadyNotifyExtendTimeout(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	spec := e.script("notify@extend",
		`systemd-notify EXTEND_TIMEOUT_USEC=5000000; sleep 1.5; systemd-notify --ready; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}, StartTimeout: wire.Duration(time.Second)})
	s := e.start(spec)
	for {
		ev := nextEvent(t, e, s, 10*time.Second)
		if ev.Type == EventAgentReady {
			break
		}
		if ev.Type == EventStopped {
			t.Fatalf("stopped (%s: %s) although the agent extended its start timeout", ev.Reason, ev.Detail)
		}
	}
}

func TestWatchdog(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	out := filepath.Join(e.helper, "watchdog-env")
	spec := e.script("notify@watchdog",
		`echo "$WATCHDOG_USEC $WATCHDOG_PID $$" > `+out+`; systemd-notify --ready
		for i in 1 2 3 4 5 6; do systemd-notify WATCHDOG=1; sleep 0.1; done; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}, Watchdog: wire.Duration(400 * time.Millisecond)})
	s := e.start(spec)
	if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventAgentReady {
		t.Fatalf("event %+v, want agent_ready", ev)
	}
	begin := time.Now()
	ev := expectStopped(t, e, s, wire.ReasonWatchdog, 10*time.Second)
	// Six pings 100 ms apart keep it alive for at least 0.5 s past ready.
	if d := time.Since(begin); d < 500*time.Millisecond {
		t.Errorf("watchdog fired %v after ready, while the agent was still pinging", d)
	}
	if !strings.Contains(ev.Detail, "WATCHDOG=1") {
		t.Errorf("detail %q", ev.Detail)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || f[0] != "400000" || f[1] != f[2] || f[1] != strconv.Itoa(s.Ready().AgentPID) {
		t.Fatalf("WATCHDOG_USEC WATCHDOG_PID $$ = %q, want 400000 and the agent's pid %d twice", b, s.Ready().AgentPID)
	}
}

func TestWatchdogTrigger(t *testing.T) {
	e := readyEnv(t, "systemd-notify")
	spec := e.script("notify@trigger", `systemd-notify --ready; sleep 0.1; systemd-notify WATCHDOG=trigger; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}, Watchdog: wire.Duration(time.Hour)})
	s := e.start(spec)
	if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventAgentReady {
		t.Fatalf("event %+v, want agent_ready", ev)
	}
	expectStopped(t, e, s, wire.ReasonWatchdog, 10*time.Second)
}

func TestReadyFD(t *testing.T) {
	for _, fd := range []int{3, 5} {
		t.Run(strconv.Itoa(fd), func(t *testing.T) {
			e := readyEnv(t)
			spec := e.script("fd@"+strconv.Itoa(fd), fmt.Sprintf(`sleep 0.1; echo >&%d; exec %d>&-; exec sleep 1000`, fd, fd),
				&Readiness{Ready: &probe.Spec{Kind: probe.KindFD, FD: fd}})
			s := e.start(spec)
			if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventAgentReady {
				t.Fatalf("event %+v, want agent_ready", ev)
			}
			// The lock moved aside for the notification descriptor, and
			// the tree still holds it.
			if lockFree(t, s.Ready().LockPath) {
				t.Fatal("the identity's lock is free while the agent runs")
			}
		})
	}
}

func TestReadyFDClosedWithoutNewline(t *testing.T) {
	e := readyEnv(t)
	spec := e.script("fd@closed", `exec 3>&-; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindFD, FD: 3}})
	s := e.start(spec)
	ev := expectStopped(t, e, s, wire.ReasonNotReady, 10*time.Second)
	if !strings.Contains(ev.Detail, "descriptor 3") {
		t.Errorf("detail %q", ev.Detail)
	}
}

// agentEnviron reads a process's environment. A process in the middle
// of an exec shows an empty one for a moment: the read is retried.
func agentEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	var b []byte
	var err error
	testproc.Eventually(t, 5*time.Second, func() bool {
		b, err = os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		return err != nil || len(b) > 0
	}, "pid %d shows no environment", pid)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for kv := range strings.SplitSeq(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// sendNotify sends one datagram to a notify socket, as sd_notify does.
func sendNotify(t *testing.T, path, msg string) {
	t.Helper()
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(s)
	if err := unix.Sendto(s, []byte(msg), 0, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
}

// readyRace is how many agents a race test starts at once: each start is
// one more chance for the race, and the 1-in-20 needs several
// per run.
const readyRace = 5

// A ready line written at once, between the exec and the moment the
// guardian starts watching the log, is seen: the check reads from where
// the log ended before the spawn.
func TestReadyLogLineWrittenAtOnce(t *testing.T) {
	e := readyEnv(t)
	ss := make([]*Session, readyRace)
	for i := range ss {
		id := fmt.Sprintf("log@once%d", i)
		spec := e.script(id, `echo ready-now; exec sleep 1000`,
			&Readiness{Ready: &probe.Spec{Kind: probe.KindLog, Pattern: "ready-now"}, StartTimeout: wire.Duration(3 * time.Second)})
		spec.LogPath = filepath.Join(e.dir, id+".log")
		ss[i] = e.start(spec)
	}
	for i, s := range ss {
		if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventAgentReady {
			b, _ := os.ReadFile(filepath.Join(e.dir, fmt.Sprintf("log@once%d.log", i)))
			t.Fatalf("agent %d: event %+v (%s), want agent_ready\nlog:\n%s", i, ev, ev.Detail, b)
		}
	}
}

// READY=1 from a process of the tree that exits at once (a forked child,
// or systemd-notify --no-block) is taken, though the sender is gone before
// the guardian reads its datagram. The guardian is stopped while the
// sender runs, so that it always reads the datagram late.
func TestReadyNotifyFromShortLivedSender(t *testing.T) {
	e := readyEnv(t)
	spec := e.script("notify@brief",
		`while [ ! -e "$HELPER_DIR/go" ]; do sleep 0.01; done
		"$@" READY=1; touch "$HELPER_DIR/sent"; exec sleep 1000`,
		&Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}, StartTimeout: wire.Duration(5 * time.Second)})
	// The sender is a child of the shell, which waits for it: gone and
	// reaped when the guardian reads. (systemd-notify run as root names
	// its parent, the shell, as the sender; as the user it names itself.)
	spec.Argv = append(append(spec.Argv, "sh"), testproc.Argv("notify-send")...)
	s := e.start(spec)
	gpid := s.Ready().GuardianPID
	if err := unix.Kill(gpid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer unix.Kill(gpid, unix.SIGCONT)
	if err := os.WriteFile(filepath.Join(e.helper, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 5*time.Second, func() bool { return !gone(filepath.Join(e.helper, "sent")) },
		"the agent did not send its READY=1")
	if err := unix.Kill(gpid, unix.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, e, s, 10*time.Second); ev.Type != EventAgentReady {
		t.Fatalf("event %+v (%s), want agent_ready\nlog:\n%s", ev, ev.Detail, e.log())
	}
}

// MAINPID= may name only a process of the agent's tree, as systemd
// requires: pid 1 is refused and never shown as the agent's.
func TestReadyNotifyRefusesMainPIDOutsideTree(t *testing.T) {
	e := readyEnv(t)
	spec := e.script("notify@mainpid", `"$@" "MAINPID=1
READY=1"; exec sleep 1000`, &Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}})
	spec.Argv = append(append(spec.Argv, "sh"), testproc.Argv("notify-send")...)
	s := e.start(spec)
	ev := nextEvent(t, e, s, 10*time.Second)
	if ev.Type != EventAgentReady || ev.MainPID != 0 {
		t.Fatalf("event %+v, want agent_ready and no main pid\nlog:\n%s", ev, e.log())
	}
	if !strings.Contains(e.log(), "MAINPID=1, which is not in the agent's tree") {
		t.Errorf("the refused MAINPID= is not logged:\n%s", e.log())
	}
}

// A flood of datagrams from outside the tree costs the guardian little
// CPU and a few log lines: each is neither looked for in the tree nor
// logged one by one.
func TestReadyNotifyOutsiderFloodIsCheap(t *testing.T) {
	e := readyEnv(t)
	spec := e.script("notify@flood", `exec sleep 1000`, &Readiness{Ready: &probe.Spec{Kind: probe.KindNotify}})
	s := e.start(spec)
	sock := agentEnviron(t, s.Ready().AgentPID)["NOTIFY_SOCKET"]
	gpid := s.Ready().GuardianPID
	before := cpuTime(t, gpid)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const flood = 20000
	for range flood {
		if err := unix.Sendto(fd, []byte("STATUS=forged"), 0, &unix.SockaddrUnix{Name: sock}); err != nil {
			t.Fatal(err)
		}
	}
	// A send blocks while the socket's queue is full (a few hundred
	// datagrams): all but those have been read.
	used := cpuTime(t, gpid) - before
	lines := strings.Count(e.log(), "notify: ignored")
	t.Logf("%d datagrams from outside the tree: %v of guardian CPU, %d log lines", flood, used, lines)
	if used > time.Second {
		t.Errorf("the guardian spent %v of CPU on %d dropped datagrams", used, flood)
	}
	if lines > 20 {
		t.Errorf("%d log lines for %d dropped datagrams", lines, flood)
	}
}

// cpuTime is the user and system CPU time pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * time.Second / 100
}
