package guardian

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/wire"
)

// bothContainments runs f with cgroup containment (where this machine
// offers it) and with session containment alone.
func bothContainments(t *testing.T, f func(t *testing.T, noCgroup bool)) {
	t.Run("session", func(t *testing.T) { f(t, true) })
	t.Run("cgroup", func(t *testing.T) {
		requireCgroup(t)
		f(t, false)
	})
}

func requireCgroup(t *testing.T) {
	t.Helper()
	cg, err := punix.NewCgroup("tether-probe-" + strings.ReplaceAll(t.Name(), "/", "_"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs a writable cgroup v2: %v", err)
		}
		t.Skipf("no writable cgroup v2 here: %v", err)
	}
	_ = cg.Remove()
}

// politeTree starts a leader, a worker in its own process group and a
// double-forked escapee in its own session, and waits for all three.
func politeTree(e *world, s *Session) []punix.Ref {
	e.t.Helper()
	pids := e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2})
	rs := refs(e.t, pids)
	// The escapee must really be outside the agent's session, and the
	// worker outside its process group, or the test proves nothing.
	agent := s.Ready().AgentPID
	var escapee, worker bool
	for _, r := range rs {
		p, _ := punix.Stat(r.Pid)
		escapee = escapee || p.Sid != agent
		worker = worker || (p.Sid == agent && p.Pgid != agent)
	}
	if !escapee || !worker {
		e.t.Fatalf("tree lacks an escapee (%v) or a worker in another group (%v)", escapee, worker)
	}
	return rs
}

func TestStartStopLeavesNothing(t *testing.T) {
	bothContainments(t, func(t *testing.T, noCgroup bool) {
		e := newWorld(t)
		spec := e.spec("alice@relay", "polite")
		spec.NoCgroup = noCgroup
		s := e.start(spec)
		r := s.Ready()
		if want := map[bool]wire.Containment{true: wire.ContainmentSession, false: wire.ContainmentCgroup}[noCgroup]; r.Containment != want {
			t.Errorf("containment %q, want %q", r.Containment, want)
		}
		if !r.Subreaper {
			t.Error("guardian is not a child subreaper")
		}
		rs := politeTree(e, s)
		if fi, err := os.Stat(r.PrivateDir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("private dir %s: %v %v", r.PrivateDir, fi, err)
		}
		if lockFree(t, r.LockPath) {
			t.Fatal("lock is free while the agent runs")
		}
		if err := s.Stop(context.Background(), 0); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		waitGone(t, rs, 100*time.Millisecond)
		if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
			t.Fatalf("after stop: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
		}
		if r.Cgroup != "" && !gone(r.Cgroup) {
			t.Errorf("cgroup %s left behind", r.Cgroup)
		}
		var types []EventType
		for ev := range s.Events() {
			types = append(types, ev.Type)
			if ev.Type == EventStopped && (ev.Cleanup == nil || ev.Cleanup.Code != wire.CleanupOK || ev.Cleanup.Forced || ev.Reason != wire.ReasonStopRequested) {
				t.Errorf("stopped event %+v %+v", ev, ev.Cleanup)
			}
		}
		if !slices.Equal(types, []EventType{EventStopped}) {
			t.Errorf("events %v, want [stopped]", types)
		}
		<-s.Done()
		log := e.log()
		for _, want := range []string{"tether guardian", "started", "stopped (stop_requested)"} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %q:\n%s", want, log)
			}
		}
	})
}

// I2: the owner dies by SIGKILL mid-work; the guardian sees EOF and the
// tree, private directory and lock are gone within the stop timeout plus
// 100 ms.
func TestI2OwnerKilled(t *testing.T) {
	bothContainments(t, func(t *testing.T, noCgroup bool) {
		for _, role := range []string{"polite", "stubborn"} {
			t.Run(role, func(t *testing.T) {
				e := newWorld(t)
				o := e.newOwner()
				spec := e.spec("i2", role)
				spec.NoCgroup = noCgroup
				spec.StopTimeout = 300 * time.Millisecond
				r := o.start(spec)
				want := map[string]int{"leader": 1, "sleeper": 2}
				if role == "stubborn" {
					want = map[string]int{"leader": 1, "worker": 1}
				}
				rs := refs(t, e.waitAnnounced(want))
				g, _ := punix.Stat(r.GuardianPID)
				rs = append(rs, g.Ref())
				begin := time.Now()
				o.kill()
				bound := spec.StopTimeout + 100*time.Millisecond
				if !testproc.UntilEvery(time.Until(begin.Add(bound)), 200*time.Microsecond, func() bool {
					reapAdopted()
					return len(alive(rs)) == 0 && gone(r.PrivateDir) && lockFree(t, r.LockPath)
				}) {
					t.Fatalf("I2 breached: after %v alive %v, private dir gone %v, lock free %v\nlog:\n%s",
						bound, alive(rs), gone(r.PrivateDir), lockFree(t, r.LockPath), e.log())
				}
				t.Logf("%s tree cleaned %v after owner SIGKILL", role, time.Since(begin))
			})
		}
	})
}

// After its owner's death, a guardian that has freed its identity stays
// until the owner's other guardians have freed theirs (see siblings):
// its own end must not take the CPU they need. Then both leave, one after
// the other, and I2 holds for both.
func TestDeadOwnersGuardiansLeaveAfterTheLastIsFree(t *testing.T) {
	e := newWorld(t)
	o := e.newOwner()
	quick := e.spec("leave-quick", "sleeper")
	quick.StopTimeout = 300 * time.Millisecond
	slow := e.spec("leave-slow", "stubborn")
	slow.StopTimeout = 600 * time.Millisecond
	rq, rs := o.start(quick), o.start(slow)
	e.waitAnnounced(map[string]int{"sleeper": 1, "leader": 1, "worker": 1})
	gq, err := refOf(rq.GuardianPID)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := refOf(rs.GuardianPID)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	o.kill()
	if !testproc.UntilEvery(quick.StopTimeout+100*time.Millisecond, 200*time.Microsecond, func() bool {
		return gone(rq.PrivateDir) && lockFree(t, rq.LockPath)
	}) {
		t.Fatalf("the polite agent's identity is not free %v after its owner's SIGKILL\nlog:\n%s", time.Since(begin), e.log())
	}
	if lockFree(t, rs.LockPath) {
		t.Fatalf("the stubborn agent's lock is free %v after the SIGKILL, before its stop timeout of %v", time.Since(begin), slow.StopTimeout)
	}
	// It stays while the stubborn one tears down: it must not leave
	// before then. Seen gone first and the stubborn lock held after, it
	// left while that lock was held (however late this test looks, on
	// a loaded machine).
	leftEarly := false
	if !testproc.UntilEvery(time.Until(begin.Add(slow.StopTimeout+100*time.Millisecond)), 200*time.Microsecond, func() bool {
		reapAdopted()
		quickGone := !isAlive(gq)
		free := gone(rs.PrivateDir) && lockFree(t, rs.LockPath)
		leftEarly = leftEarly || (quickGone && !lockFree(t, rs.LockPath))
		return free || leftEarly
	}) || leftEarly {
		if leftEarly {
			t.Fatalf("the polite agent's guardian left %v after the SIGKILL, while the stubborn agent's was still tearing down\nlog:\n%s", time.Since(begin), e.log())
		}
		t.Fatalf("I2 breached: the stubborn agent's identity is not free %v after the SIGKILL\nlog:\n%s", time.Since(begin), e.log())
	}
	waitGone(t, []procRef{gq, gs}, siblingWait)
	t.Logf("both identities free and both guardians gone %v after the owner's SIGKILL", time.Since(begin))
}

// I7 and I2: with the guardian frozen by SIGSTOP when its owner dies, the
// lock stays held and the tree alive; after SIGCONT everything is cleaned.
func TestI7OwnerKilledWhileGuardianStopped(t *testing.T) {
	e := newWorld(t)
	o := e.newOwner()
	spec := e.spec("frozen-guardian", "polite")
	spec.StopTimeout = 500 * time.Millisecond
	r := o.start(spec)
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "sleeper": 2}))
	if err := syscall.Kill(r.GuardianPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, r.GuardianPID, 'T')
	o.kill()
	// Owner dead, guardian stopped: nothing may move. Check for a while
	// that the identity stays held (this is the point of the test, not a
	// wait for readiness).
	if testproc.UntilEvery(200*time.Millisecond, 10*time.Millisecond, func() bool {
		return lockFree(t, r.LockPath) || len(alive(rs)) != len(rs) || gone(r.PrivateDir)
	}) {
		t.Fatal("a stopped guardian released the identity or lost its tree")
	}
	begin := time.Now()
	if err := syscall.Kill(r.GuardianPID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !testproc.UntilEvery(time.Until(begin.Add(spec.StopTimeout+100*time.Millisecond)), 200*time.Microsecond, func() bool {
		reapAdopted()
		return len(alive(rs)) == 0 && gone(r.PrivateDir) && lockFree(t, r.LockPath)
	}) {
		t.Fatalf("after SIGCONT: alive %v, private dir gone %v", alive(rs), gone(r.PrivateDir))
	}
}

func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	var p punix.Proc
	var err error
	if !testproc.Until(5*time.Second, func() bool {
		p, err = punix.Stat(pid)
		return err == nil && p.State == state
	}) {
		t.Fatalf("pid %d never reached state %c (%+v, %v)", pid, state, p, err)
	}
}

// The agent starts with every signal at its default action, as it would
// from a shell: none of those its guardian shrugs off is ignored in the
// agent (an ignored signal stays ignored across exec), so that SIGPIPE
// ends a writer whose reader is gone and SIGUSR1 or SIGALRM do what the
// program expects.
func TestAgentSignalsAtDefault(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("signals@default")
	spec.Argv = []string{"sleep", "1000"}
	s := e.start(spec)
	pid := s.Ready().AgentPID
	// Read once it runs sleep: between the fork and the exec the child
	// is still the guardian's copy, whose signals are the runtime's.
	if !testproc.Until(5*time.Second, func() bool {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(comm)) == "sleep"
	}) {
		t.Fatalf("agent %d never ran sleep", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, _ := strings.Cut(line, ":"); k == "SigIgn" || k == "SigBlk" {
			if v = strings.TrimSpace(v); strings.Trim(v, "0") != "" {
				t.Errorf("the agent starts with %s %s, want none", k, v)
			}
		}
	}
}

// I7: stops, continues and harmless signals are not owner death.
func TestI7SignalsAreNotOwnerDeath(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("signals", "polite"))
	rs := politeTree(e, s)
	g := s.Ready().GuardianPID
	for range 5 {
		if err := syscall.Kill(g, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitState(t, g, 'T')
		if err := syscall.Kill(g, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		for _, sig := range []syscall.Signal{syscall.SIGCHLD, syscall.SIGWINCH, syscall.SIGURG, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
			syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGVTALRM, syscall.SIGPROF} {
			if err := syscall.Kill(g, sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every signal above has been delivered once the guardian has
	// answered something it can only answer after handling them: probe
	// it with a stop request that it must still see as the first event.
	select {
	case ev := <-s.Events():
		t.Fatalf("guardian reported %v after harmless signals", ev.Type)
	default:
	}
	if len(alive(rs)) != len(rs) {
		t.Fatalf("tree members died: %v of %v alive", alive(rs), rs)
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	ev := <-s.Events()
	if ev.Type != EventStopped || ev.Reason != wire.ReasonStopRequested {
		t.Fatalf("first event %v (%s), want stopped by request", ev.Type, ev.Reason)
	}
}

// A SIGTERM to the guardian itself tears the tree down and says so.
func TestGuardianSIGTERM(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("sigterm", "polite"))
	rs := politeTree(e, s)
	if err := syscall.Kill(s.Ready().GuardianPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := <-s.Events()
	if ev.Type != EventStopped || ev.Reason != wire.ReasonSignal || ev.Err != nil {
		t.Fatalf("event %+v, want stopped by signal", ev)
	}
	waitGone(t, rs, time.Second)
}

func TestSpawnFailuresLeaveNothing(t *testing.T) {
	e := newWorld(t)
	noexec := filepath.Join(e.dir, "noexec.sh")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		argv  []string
		dir   string
		cause wire.SpawnCause
		is    error
		path  string
	}{
		{"missing absolute", []string{filepath.Join(e.dir, "nope")}, "", wire.CauseNotFound, fs.ErrNotExist, filepath.Join(e.dir, "nope")},
		{"missing in PATH", []string{"tether-no-such-command"}, "", wire.CauseNotFound, fs.ErrNotExist, "tether-no-such-command"},
		{"not executable", []string{noexec}, "", wire.CauseNotExecutable, fs.ErrPermission, noexec},
		{"directory", []string{e.dir}, "", wire.CauseNotExecutable, fs.ErrPermission, e.dir},
		{"bad dir", []string{"/bin/true"}, filepath.Join(e.dir, "nodir"), wire.CauseBadDir, nil, filepath.Join(e.dir, "nodir")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := e.spec("spawn-fail")
			spec.Argv, spec.Dir = c.argv, c.dir
			_, err := Start(context.Background(), spec)
			var se *StartError
			if !errors.As(err, &se) || !errors.Is(err, ErrSpawn) || se.Cause != c.cause || se.Path != c.path {
				t.Fatalf("err %v (%#v), want spawn/%s at %s", err, se, c.cause, c.path)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("%v does not match %v", err, c.is)
			}
			if d := e.privateDirs(); len(d) != 0 {
				t.Errorf("private dirs left: %v", d)
			}
			if !lockFree(t, filepath.Join(e.locks, Key("spawn-fail")+".lock")) {
				t.Error("lock held after a failed start")
			}
		})
	}
	// The identity is usable right after the failures.
	s := e.start(e.spec("spawn-fail", "polite"))
	politeTree(e, s)
}

func TestAgentExitsOnItsOwnThenRestart(t *testing.T) {
	e := newWorld(t)
	s, err := Start(context.Background(), e.spec("exits", "exit", "3"))
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	for ev := range s.Events() {
		got = append(got, ev)
	}
	<-s.Done()
	if len(got) != 2 || got[0].Type != EventExited || got[0].Exit == nil || got[0].Exit.Code != 3 ||
		got[1].Type != EventStopped || got[1].Reason != wire.ReasonAgentExited || got[1].Err != nil {
		t.Fatalf("events %+v", got)
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Errorf("Stop after the agent exited: %v", err)
	}
	// Retry works: the lock and directory were released.
	s2 := e.start(e.spec("exits", "polite"))
	politeTree(e, s2)
}

// A Stop whose context ends before the stubborn tree is down returns the
// context error; a second Stop confirms completion with the SIGKILL noted.
func TestStopTimeoutThenConfirm(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("stubborn", "stubborn")
	spec.StopTimeout = 400 * time.Millisecond
	s := e.start(spec)
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "worker": 1}))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Stop(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first Stop: %v, want deadline exceeded", err)
	}
	if len(alive(rs)) == 0 {
		t.Fatal("stubborn tree died before its stop timeout")
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	waitGone(t, rs, 100*time.Millisecond)
	ev := <-s.Events()
	if ev.Type != EventStopped || !ev.Cleanup.Forced || ev.Cleanup.Killed < 2 {
		t.Fatalf("event %+v cleanup %+v, want forced with 2 killed", ev, ev.Cleanup)
	}
}

// Two owners race for one identity: exactly one wins and the other is
// told who holds it.
func TestRaceOneWinner(t *testing.T) {
	e := newWorld(t)
	for round := range 5 {
		type result struct {
			s   *Session
			err error
		}
		res := make(chan result, 2)
		for _, profile := range []string{"a", "b"} {
			spec := e.spec("raced", "polite")
			spec.Profile = profile
			go func() {
				s, err := Start(context.Background(), spec)
				res <- result{s, err}
			}()
		}
		r1, r2 := <-res, <-res
		if (r1.err == nil) == (r2.err == nil) {
			for _, r := range []result{r1, r2} {
				if r.s != nil {
					stopSession(t, r.s)
				}
			}
			t.Fatalf("round %d: errors %v and %v, want exactly one winner", round, r1.err, r2.err)
		}
		win, lose := r1, r2
		if r1.err != nil {
			win, lose = r2, r1
		}
		var se *StartError
		if !errors.Is(lose.err, ErrContention) || !errors.As(lose.err, &se) || se.Holder == nil ||
			se.Holder.GuardianPID != win.s.Ready().GuardianPID || se.Holder.Profile == "" {
			t.Errorf("round %d: loser got %v (holder %+v), want contention naming guardian %d", round, lose.err, se, win.s.Ready().GuardianPID)
		}
		stopSession(t, win.s)
		os.RemoveAll(e.helper)
		os.MkdirAll(e.helper, 0o700)
	}
}

// The guardian is SIGKILLed while its agent lives: the agent's inherited
// descriptor keeps the identity locked, and a new guardian takes the
// abandoned tree over.
func TestTakeoverAfterGuardianKill(t *testing.T) {
	bothContainments(t, func(t *testing.T, noCgroup bool) {
		e := newWorld(t)
		spec := e.spec("abandoned", "polite")
		spec.NoCgroup = noCgroup
		s, err := Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		old := s.Ready()
		rs := politeTree(e, s)
		for _, r := range rs {
			expectAdopted(r.Pid) // the tree falls to this subreaper
		}
		if err := syscall.Kill(old.GuardianPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var last Event
		for ev := range s.Events() {
			last = ev
		}
		if last.Type != EventLost || !errors.Is(last.Err, ErrGuardianLost) {
			t.Fatalf("last event %+v, want lost", last)
		}
		if len(alive(rs)) != len(rs) || lockFree(t, old.LockPath) {
			t.Fatal("the abandoned tree should still live and hold the lock")
		}
		spec.Profile = "next"
		s2 := e.start(spec)
		if s2.Ready().TookOver == nil || s2.Ready().TookOver.GuardianPID != old.GuardianPID {
			t.Errorf("ready.took_over = %+v, want guardian %d", s2.Ready().TookOver, old.GuardianPID)
		}
		waitGone(t, rs, 100*time.Millisecond)
		if !gone(old.PrivateDir) {
			t.Errorf("abandoned private dir %s left", old.PrivateDir)
		}
		if old.Cgroup != "" && !gone(old.Cgroup) {
			t.Errorf("abandoned cgroup %s left", old.Cgroup)
		}
	})
}

// The guardian is SIGKILLed and its whole tree had closed the inherited
// lock descriptor: the lock is free, but the record names the tree, and
// the next guardian stops it before starting.
func TestLeftoverTreeWithClosedLock(t *testing.T) {
	bothContainments(t, func(t *testing.T, noCgroup bool) {
		e := newWorld(t)
		spec := e.spec("closer", "polite-closer")
		spec.NoCgroup = noCgroup
		s, err := Start(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		old := s.Ready()
		pids := e.waitAnnounced(map[string]int{"leader": 1, "closer": 2})
		rs := refs(t, pids)
		for _, r := range rs {
			expectAdopted(r.Pid)
		}
		if err := syscall.Kill(old.GuardianPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for range s.Events() {
		}
		if !lockFree(t, old.LockPath) {
			t.Fatal("lock should be free: every holder closed it")
		}
		s2 := e.start(spec)
		// Without a cgroup, an escapee that left the session and closed
		// the lock cannot be found once its guardian is dead; the
		// session members can.
		want := rs
		if noCgroup {
			want = nil
			for _, r := range rs {
				if p, _ := punix.Stat(r.Pid); p.Sid == old.AgentPID {
					want = append(want, r)
				} else {
					t.Cleanup(func() { syscall.Kill(r.Pid, syscall.SIGKILL); waitGone(t, []punix.Ref{r}, 5*time.Second) })
				}
			}
		}
		waitGone(t, want, 100*time.Millisecond)
		if !gone(old.PrivateDir) {
			t.Errorf("old private dir %s left", old.PrivateDir)
		}
		_ = s2
	})
}

// I6: the agent holds no end of any tether, and with 50 guardians under
// one owner, the owner's SIGKILL reaches every guardian at once.
func TestI6FiftyGuardiansSeeOwnerDeath(t *testing.T) {
	e := newWorld(t)
	o := e.newOwner()
	const n = 50
	var rs []punix.Ref
	var dirs []string
	for i := range n {
		spec := e.spec("many-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "sleeper")
		spec.StopTimeout = 300 * time.Millisecond
		r := o.start(spec)
		p, err := punix.Stat(r.AgentPID)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := punix.Stat(r.GuardianPID)
		rs = append(rs, p.Ref(), g.Ref())
		dirs = append(dirs, r.PrivateDir)
		assertNoSocketFDs(t, r.AgentPID)
	}
	e.waitAnnounced(map[string]int{"sleeper": n})
	begin := time.Now()
	o.kill()
	took := waitGone(t, rs, 300*time.Millisecond+time.Second)
	for _, d := range dirs {
		if !gone(d) {
			t.Errorf("private dir %s left", d)
		}
	}
	t.Logf("%d guardians and agents gone %v after the owner's SIGKILL", n, time.Since(begin))
	_ = took
}

func assertNoSocketFDs(t *testing.T, pid int) {
	t.Helper()
	dir := filepath.Join("/proc", fmt.Sprint(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		target, _ := os.Readlink(filepath.Join(dir, d.Name()))
		if strings.HasPrefix(target, "socket:") {
			t.Errorf("agent pid %d inherited descriptor %s -> %s", pid, d.Name(), target)
		}
	}
}

// Reclaim frees the identity of a SIGKILLed guardian without starting
// anything: the abandoned tree is stopped, its directory removed and the
// lock released.
func TestReclaimAfterGuardianKill(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("reclaimed", "stubborn")
	spec.StopTimeout = 200 * time.Millisecond
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	old := s.Ready()
	rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "worker": 1}))
	for _, r := range rs {
		expectAdopted(r.Pid)
	}
	if err := syscall.Kill(old.GuardianPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range s.Events() {
	}
	if lockFree(t, old.LockPath) {
		t.Fatal("the abandoned tree should hold the lock")
	}
	if err := Reclaim(context.Background(), spec); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	waitGone(t, rs, 100*time.Millisecond)
	if !lockFree(t, old.LockPath) || !gone(old.PrivateDir) {
		t.Fatalf("after reclaim: lock free %v, private dir gone %v", lockFree(t, old.LockPath), gone(old.PrivateDir))
	}
	// Reclaiming a free identity is a no-op; a held one is contention.
	if err := Reclaim(context.Background(), spec); err != nil {
		t.Fatalf("Reclaim of a free identity: %v", err)
	}
	e.start(e.spec("reclaimed", "polite"))
	if err := Reclaim(context.Background(), spec); !errors.Is(err, ErrContention) {
		t.Fatalf("Reclaim of a held identity: %v, want contention", err)
	}
}
