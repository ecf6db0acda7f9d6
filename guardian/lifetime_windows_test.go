package guardian

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	pwin "github.com/tether-dev/tether/platform/windows"
	"github.com/tether-dev/tether/wire"
	"golang.org/x/sys/windows"
)

// tree waits for a polite agent's leader and worker and returns them.
func (e *world) tree(want map[string]int) []procRef {
	e.t.Helper()
	return refs(e.t, e.waitAnnounced(want))
}

var politeWant = map[string]int{"leader": 1, "sleeper": 1}

// gracefulWorks says whether a CTRL_BREAK can reach an agent here: Wine
// has no console to carry one for a windowless guardian, so there the
// stop goes straight to TerminateJobObject.
func gracefulWorks() bool { return !underWine() }

func TestStartStopLeavesNothing(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("alice@relay", "polite"))
	r := s.Ready()
	rs := e.tree(politeWant)
	name, err := MutexName("alice@relay")
	if err != nil {
		t.Fatal(err)
	}
	if r.Containment != wire.ContainmentJob || r.Job == "" || r.LockPath != name || r.AgentPID == 0 {
		t.Errorf("ready %+v", r)
	}
	if fi, err := os.Stat(r.PrivateDir); err != nil || !fi.IsDir() {
		t.Fatalf("private dir %s: %v", r.PrivateDir, err)
	}
	if lockFree(t, r.LockPath) {
		t.Fatal("mutex is free while the agent runs")
	}
	if err := s.Stop(context.Background(), 0); err != nil {
		t.Fatalf("Stop: %v\nlog:\n%s", err, e.log())
	}
	waitGone(t, rs, 2*time.Second)
	if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
		t.Fatalf("after stop: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
	}
	var types []EventType
	for ev := range s.Events() {
		types = append(types, ev.Type)
		if ev.Type == EventStopped && (ev.Cleanup == nil || ev.Cleanup.Code != wire.CleanupOK || ev.Reason != wire.ReasonStopRequested) {
			t.Errorf("stopped event %+v %+v", ev, ev.Cleanup)
		}
		if ev.Type == EventStopped && gracefulWorks() && ev.Cleanup.Forced {
			t.Errorf("a polite agent needed TerminateJobObject: %+v", ev.Cleanup)
		}
	}
	if !slices.Equal(types, []EventType{EventStopped}) {
		t.Errorf("events %v, want [stopped]", types)
	}
	<-s.Done()
	for _, want := range []string{"tether guardian", "started", "stopped (stop_requested)"} {
		if !strings.Contains(e.log(), want) {
			t.Errorf("log lacks %q:\n%s", want, e.log())
		}
	}
}

// I2: the owner process is terminated; the guardian sees the tether's EOF
// (or the owner's process handle) and the tree, private directory and
// mutex are gone within the stop timeout plus 100 ms.
func TestI2OwnerKilled(t *testing.T) {
	for _, role := range []string{"polite", "stubborn"} {
		t.Run(role, func(t *testing.T) {
			e := newWorld(t)
			o := e.newOwner()
			spec := e.spec("i2", role)
			spec.StopTimeout = 300 * time.Millisecond
			r := o.start(spec)
			want := politeWant
			if role == "stubborn" {
				want = map[string]int{"leader": 1, "worker": 1}
			}
			rs := e.tree(want)
			g, err := refOf(r.GuardianPID)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, g)
			begin := time.Now()
			o.kill()
			bound := spec.StopTimeout + 100*time.Millisecond
			if !testproc.Until(time.Until(begin.Add(bound)), func() bool {
				return len(alive(rs)) == 0 && gone(r.PrivateDir) && lockFree(t, r.LockPath)
			}) {
				t.Fatalf("I2 breached: after %v alive %v, private dir gone %v, lock free %v\nlog:\n%s",
					bound, alive(rs), gone(r.PrivateDir), lockFree(t, r.LockPath), e.log())
			}
			t.Logf("%s tree cleaned %v after the owner's TerminateProcess", role, time.Since(begin))
			if !strings.Contains(e.log(), "stopped (owner_lost)") {
				t.Errorf("log lacks the owner_lost teardown:\n%s", e.log())
			}
		})
	}
}

// Closing the tether is the owner's death too.
func TestSessionCloseTearsDown(t *testing.T) {
	e := newWorld(t)
	s, err := Start(context.Background(), e.spec("closer", "polite"))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Ready()
	rs := e.tree(politeWant)
	s.Close()
	for range s.Events() {
	}
	<-s.Done()
	waitGone(t, rs, 2*time.Second)
	if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
		t.Fatalf("after close: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
	}
}

// The guardian dies by TerminateProcess: its job takes the agent and the
// agent's worker with it, the session reports the loss, and the next
// start of the identity takes over: it finds the mutex abandoned (this
// test keeps the mutex object alive across the death, as a waiting
// contender would), removes the dead guardian's private directory, and
// names it in ready.
func TestGuardianTerminatedKillsTreeAndNextTakesOver(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("killed-guardian", "stubborn")
	s := e.start(spec)
	r := s.Ready()
	rs := e.tree(map[string]int{"leader": 1, "worker": 1})
	np, _ := windows.UTF16PtrFromString(r.LockPath)
	keep, err := windows.CreateMutex(nil, false, np)
	if keep == 0 {
		t.Fatal(err)
	}
	defer windows.CloseHandle(keep)
	stopOrphan(r.GuardianPID)
	waitGone(t, rs, 2*time.Second)
	var last Event
	for ev := range s.Events() {
		last = ev
	}
	if last.Type != EventLost || !errors.Is(last.Err, ErrGuardianLost) {
		t.Fatalf("last event %+v, want lost", last)
	}
	if gone(r.PrivateDir) {
		t.Fatal("a killed guardian removed its private directory")
	}
	s2 := e.start(e.spec("killed-guardian", "polite"))
	r2 := s2.Ready()
	if r2.TookOver == nil || r2.TookOver.GuardianPID != r.GuardianPID {
		t.Errorf("took over %+v, want guardian pid %d", r2.TookOver, r.GuardianPID)
	}
	if !gone(r.PrivateDir) {
		t.Errorf("the dead guardian's private dir %s is left", r.PrivateDir)
	}
	if !strings.Contains(e.log(), "mutex abandoned: true") {
		t.Errorf("log does not report the abandoned mutex:\n%s", e.log())
	}
}

// Reclaim frees an identity whose guardian died, and refuses one held by
// a live guardian.
func TestReclaim(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("reclaimed", "polite")
	s := e.start(spec)
	r := s.Ready()
	if err := Reclaim(context.Background(), spec); !errors.Is(err, ErrContention) {
		t.Fatalf("Reclaim of a live identity: %v, want contention", err)
	}
	rs := e.tree(politeWant)
	stopOrphan(r.GuardianPID)
	waitGone(t, rs, 2*time.Second)
	<-s.Done()
	if err := Reclaim(context.Background(), spec); err != nil {
		t.Fatalf("Reclaim: %v", err)
	}
	if !gone(r.PrivateDir) || !lockFree(t, r.LockPath) {
		t.Fatalf("after reclaim: private dir gone %v, lock free %v", gone(r.PrivateDir), lockFree(t, r.LockPath))
	}
	if dirs := e.privateDirs(); len(dirs) != 0 {
		t.Errorf("private root holds %v", dirs)
	}
}

// I1: owners in two processes, and two more starts in this one, race for
// one identity: exactly one agent runs, and every loser is told who holds
// it.
func TestRaceOneWinner(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("raced", "polite")
	owners := []*owner{e.newOwner(), e.newOwner()}
	var mu sync.Mutex
	var readies []*wire.Ready
	var refusals []ownerReply
	var sessions []*Session
	var wg sync.WaitGroup
	for _, o := range owners {
		wg.Go(func() {
			rep := o.do(ownerOp{Op: "start", Spec: spec})
			mu.Lock()
			defer mu.Unlock()
			if rep.Ready != nil {
				readies = append(readies, rep.Ready)
				// Its owner's death ends it; should the test fail
				// first, it is ended here.
				t.Cleanup(func() { stopOrphan(rep.Ready.GuardianPID) })
			} else {
				refusals = append(refusals, rep)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			s, err := Start(context.Background(), spec)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				r := s.Ready()
				readies = append(readies, &r)
				sessions = append(sessions, s)
				return
			}
			var se *StartError
			if !errors.As(err, &se) {
				t.Errorf("Start: %v", err)
				return
			}
			refusals = append(refusals, ownerReply{Code: se.Code, Error: err.Error()})
			if se.Code == wire.CodeContention && (se.Holder == nil || se.Holder.GuardianPID == 0) {
				t.Errorf("contention without a holder: %v", err)
			}
		})
	}
	wg.Wait()
	for _, s := range sessions {
		t.Cleanup(func() { stopSession(t, s) })
	}
	if len(readies) != 1 {
		t.Fatalf("%d agents started, want 1; refusals %+v", len(readies), refusals)
	}
	for _, rep := range refusals {
		if rep.Code != wire.CodeContention {
			t.Errorf("refusal %+v, want contention", rep)
		}
	}
	leaders := e.waitAnnounced(map[string]int{"leader": 1})["leader"]
	if len(leaders) != 1 || leaders[0] != readies[0].AgentPID {
		t.Errorf("leaders %v, want only %d", leaders, readies[0].AgentPID)
	}
	for _, o := range owners {
		o.kill()
	}
}

// I6: the agent inherits no pipe, so no tether end: the test's own
// process shows that the scan sees pipes where there are some.
func TestAgentInheritsNoTether(t *testing.T) {
	e := newWorld(t)
	e.start(e.spec("no-tether", "pipes"))
	e.waitAnnounced(map[string]int{"leader": 1})
	b, err := os.ReadFile(filepath.Join(e.helper, "pipes"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "[]" {
		t.Errorf("the agent holds pipe handles %s", got)
	}
	if len(pipeHandles()) == 0 {
		t.Error("the scan finds no pipe even here, where the session's tether is one")
	}
}

// The private directory admits the user alone (see the platform test for
// what Wine can show of a DACL).
func TestPrivateDirIsUserOnly(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("acl", "polite"))
	user, err := pwin.UserSID()
	if err != nil {
		t.Fatal(err)
	}
	sids, protected, err := pwin.AllowedSIDs(s.Ready().PrivateDir)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{user: true}
	if underWine() {
		allowed["S-1-5-18"] = true
	}
	if len(sids) == 0 {
		t.Fatal("the private dir's DACL grants nothing")
	}
	for _, sid := range sids {
		if !allowed[sid] {
			t.Errorf("private dir grants access to %s (DACL for %v)", sid, sids)
		}
	}
	if !underWine() && !protected {
		t.Error("private dir DACL is not protected")
	}
}

func TestAgentExitsOnItsOwn(t *testing.T) {
	e := newWorld(t)
	s := e.start(e.spec("exits", "exit", "3"))
	var types []EventType
	for ev := range s.Events() {
		types = append(types, ev.Type)
		if ev.Type == EventExited && (ev.Exit == nil || ev.Exit.Code != 3) {
			t.Errorf("exited %+v", ev.Exit)
		}
		if ev.Type == EventStopped && ev.Reason != wire.ReasonAgentExited {
			t.Errorf("stopped for %s", ev.Reason)
		}
	}
	if !slices.Equal(types, []EventType{EventExited, EventStopped}) {
		t.Errorf("events %v", types)
	}
	if dirs := e.privateDirs(); len(dirs) != 0 {
		t.Errorf("private root holds %v", dirs)
	}
}

func TestSpawnFailureLeavesNothing(t *testing.T) {
	e := newWorld(t)
	spec := e.spec("missing")
	spec.Argv = []string{filepath.Join(e.dir, "no-such-agent")}
	_, err := Start(context.Background(), spec)
	var se *StartError
	if !errors.As(err, &se) || se.Code != wire.CodeSpawn || se.Cause != wire.CauseNotFound || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want spawn/not_found", err)
	}
	name, _ := MutexName("missing")
	if !lockFree(t, name) {
		t.Error("mutex held after a failed start")
	}
	if dirs := e.privateDirs(); len(dirs) != 0 {
		t.Errorf("private root holds %v", dirs)
	}
}

func TestGuardianRunByHandExplains(t *testing.T) {
	for _, args := range [][]string{nil, {"--tether=12"}, {"--tether=0x7ffffffc", "--owner=1:2"}} {
		if code := Main(args); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", args, code)
		}
	}
}
