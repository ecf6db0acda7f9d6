//go:build unix

package unix

import (
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

func TestTreeMembersSynthetic(t *testing.T) {
	self := os.Getpid()
	procs := []Proc{
		{Pid: 1, PPid: 0, Sid: 1, State: 'S', Start: 1},
		{Pid: self, PPid: 1, Sid: self, State: 'R', Start: 2},
		{Pid: 100, PPid: 1, Sid: 100, State: 'S', Start: 3},   // the guardian (Root)
		{Pid: 101, PPid: 100, Sid: 101, State: 'S', Start: 5}, // the session leader
		{Pid: 102, PPid: 101, Sid: 101, State: 'S', Start: 6}, // worker
		{Pid: 103, PPid: 100, Sid: 103, State: 'S', Start: 7}, // double-forked escapee, adopted by Root
		{Pid: 104, PPid: 101, Sid: 101, State: 'Z', Start: 8}, // exited, unreaped
		{Pid: 105, PPid: 102, Sid: 101, State: 'T', Start: 8}, // stopped
		{Pid: 200, PPid: 1, Sid: 101, State: 'S', Start: 9},   // in the session, orphaned to init
		{Pid: 300, PPid: 1, Sid: 300, State: 'S', Start: 9},   // known holder of the lock
		{Pid: 400, PPid: 1, Sid: 400, State: 'S', Start: 9},   // unrelated
		{Pid: 556, PPid: 1, Sid: 555, State: 'S', Start: 9},   // session 555, whose leader is gone
		{Pid: 600, PPid: self, Sid: self, State: 'S', Start: 9},
	}
	for _, tc := range []struct {
		name string
		tree Tree
		want []int
	}{
		{"empty", Tree{}, nil},
		{"root", Tree{Root: 100}, []int{101, 102, 103, 105}},
		{"leader", Tree{Leader: Ref{Pid: 101, Start: 5}}, []int{101, 102, 105, 200}},
		{"leader pid reused", Tree{Leader: Ref{Pid: 101, Start: 4}}, nil},
		{"leader gone, session lives", Tree{Leader: Ref{Pid: 555, Start: 1}}, []int{556}},
		{"extra", Tree{Extra: []Ref{{300, 9}, {400, 1}, {999, 9}}}, []int{300}},
		{"never self or init", Tree{Root: 1, Extra: []Ref{{self, 2}, {1, 1}}}, []int{100, 101, 102, 103, 105, 200, 300, 400, 556, 600}},
		{"no duplicates", Tree{Root: 100, Leader: Ref{Pid: 101, Start: 5}, Extra: []Ref{{102, 6}, {300, 9}}}, []int{101, 102, 103, 105, 200, 300}},
	} {
		var got []int
		for _, p := range tc.tree.members(procs, nil) {
			got = append(got, p.Pid)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: members = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTreeAliveError(t *testing.T) {
	err := error(&TreeAliveError{Left: []Proc{{Pid: 12, State: 'D'}, {Pid: 34, State: 'T'}}})
	want := "2 process(es) still alive after SIGKILL: 12 (state D), 34 (state T)"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	var ae *TreeAliveError
	if !errors.As(err, &ae) || len(ae.Left) != 2 {
		t.Errorf("errors.As(%v) failed", err)
	}
}

func TestTreeStopNothing(t *testing.T) {
	for _, tree := range []*Tree{
		{},
		{Leader: Ref{Pid: 1 << 30, Start: 1}},
		{Extra: []Ref{{Pid: 1 << 30, Start: 1}}},
	} {
		start := time.Now()
		rep, err := tree.Stop(time.Minute, time.Minute)
		if err != nil || rep != (StopReport{}) || time.Since(start) > time.Second {
			t.Errorf("Stop(%+v) = %+v, %v after %v; want nothing done at once", tree, rep, err, time.Since(start))
		}
	}
}

// testTree is a helper tree started through a Reaper in an isolated test
// process, which is the tree's Root as a guardian would be.
type testTree struct {
	tree  *Tree
	procs map[string]Ref
	exit  <-chan ExitStatus // the leader's
}

// startTree starts a "leader" helper in a session of its own with children
// as in the helper's arguments (KIND:ROLE:TAG), waits until every process
// has announced itself and every double-forked one has been adopted, and
// kills what is left of the tree when the test ends.
func startTree(t *testing.T, r *Reaper, children ...string) *testTree {
	t.Helper()
	rp := newReadyPipe(t)
	_, exit, err := r.Start(func() (int, error) {
		return startSession(t, "leader", helperOpts{tag: "leader", args: children, ready: rp}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	tags := []string{"leader"}
	var escapees []string
	for _, c := range children {
		f := strings.SplitN(c, ":", 3)
		tags = append(tags, f[2])
		if f[0] == "escape" {
			escapees = append(escapees, f[2])
		}
	}
	tt := &testTree{procs: rp.wait(t, tags...), exit: exit}
	// As a guardian builds it, but found by a scan of every process: the
	// walk of the subreaper's children (RootSubreaper) can lose a process
	// while its parent dies, as TestTreeMembersDuringReparent shows.
	tt.tree = &Tree{Leader: tt.procs["leader"], Root: os.Getpid()}
	t.Cleanup(func() {
		if _, err := tt.tree.Stop(0, waitLimit); err != nil {
			t.Errorf("killing what was left of the tree: %v", err)
		}
	})
	for _, tag := range escapees {
		ref := tt.procs[tag]
		if !subreaper {
			// Without a subreaper init adopts it: name it.
			tt.tree.Extra = append(tt.tree.Extra, ref)
			continue
		}
		testproc.Eventually(t, waitLimit, func() bool {
			p, err := Stat(ref.Pid)
			return err == nil && p.PPid == os.Getpid()
		}, "timed out after %v waiting for %s to be adopted by the test process", waitLimit, tag)
	}
	return tt
}

// members returns the pids of the tree's live members, sorted.
func (tt *testTree) members(t *testing.T) []int {
	t.Helper()
	ms, err := tt.tree.Members()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range ms {
		pids = append(pids, p.Pid)
	}
	slices.Sort(pids)
	return pids
}

func (tt *testTree) pids(tags ...string) []int {
	var pids []int
	for _, tag := range tags {
		pids = append(pids, tt.procs[tag].Pid)
	}
	slices.Sort(pids)
	return pids
}

// checkGone checks that every process of the tree is dead and that the
// leader died of SIGTERM.
func (tt *testTree) checkGone(t *testing.T, leaderSig syscall.Signal) {
	t.Helper()
	for tag, ref := range tt.procs {
		if Alive(ref) {
			p, _ := Stat(ref.Pid)
			t.Errorf("%s (pid %d, state %c) survived Stop", tag, ref.Pid, p.State)
		}
	}
	if ms := tt.members(t); len(ms) != 0 {
		t.Errorf("Members() after Stop = %v", ms)
	}
	if st := receive(t, "the leader", tt.exit); st != (ExitStatus{Code: -1, Signal: leaderSig}) {
		t.Errorf("leader status %+v, want killed by %v", st, leaderSig)
	}
}

// A polite tree (leader, a worker in a process group of its own, a
// double-forked escapee in a session of its own) goes down on SIGTERM.
func TestTreeStopPolite(t *testing.T) {
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	tt := startTree(t, r, "pgrp:sleep:worker", "escape:sleep:escapee")

	leader, _ := Stat(tt.procs["leader"].Pid)
	worker, _ := Stat(tt.procs["worker"].Pid)
	escapee, _ := Stat(tt.procs["escapee"].Pid)
	if leader.Sid != leader.Pid || worker.Sid != leader.Sid || worker.Pgid == leader.Pgid || escapee.Sid == leader.Sid {
		t.Fatalf("tree shape: leader %+v, worker %+v, escapee %+v", leader, worker, escapee)
	}
	if subreaper {
		// The escapee is found through Root alone, the rest through
		// the session alone.
		if got, want := tt.members(t), tt.pids("leader", "worker", "escapee"); !slices.Equal(got, want) {
			t.Fatalf("Members() = %v, want %v", got, want)
		}
		sessionOnly := &Tree{Leader: tt.tree.Leader}
		ms, _ := sessionOnly.Members()
		if len(ms) != 2 {
			t.Errorf("session members = %+v, want leader and worker", ms)
		}
		// Walking the subreaper's children finds the same, as long as
		// nothing dies meanwhile.
		walk := &testTree{tree: &Tree{Leader: tt.tree.Leader, Root: os.Getpid(), RootSubreaper: true}}
		if got, want := walk.members(t), tt.pids("leader", "worker", "escapee"); !slices.Equal(got, want) {
			t.Errorf("Members() by walking the subreaper's children = %v, want %v", got, want)
		}
	}

	start := time.Now()
	rep, err := tt.tree.Stop(waitLimit, time.Second)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took > waitLimit/2 {
		t.Errorf("Stop took %v: it did not wake on the exits", took)
	}
	if want := (StopReport{Terminated: 3}); rep != want {
		t.Errorf("Stop report %+v, want %+v", rep, want)
	}
	tt.checkGone(t, syscall.SIGTERM)

	if rep, err := tt.tree.Stop(waitLimit, time.Second); err != nil || rep != (StopReport{}) {
		t.Errorf("second Stop = %+v, %v; want nothing to do", rep, err)
	}
}

// Members that ignore SIGTERM, one of them double-forked, are killed once
// the stop timeout has passed.
func TestTreeStopForced(t *testing.T) {
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	tt := startTree(t, r, "pgrp:ignore-term:stubborn", "escape:ignore-term:escapee", "child:sleep:polite")

	// Long enough for the polite members to die of SIGTERM, even on a
	// loaded machine.
	const timeout = 500 * time.Millisecond
	start := time.Now()
	rep, err := tt.tree.Stop(timeout, waitLimit)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if want := (StopReport{Terminated: 4, Killed: 2, Forced: true}); rep != want {
		t.Errorf("Stop report %+v, want %+v", rep, want)
	}
	if took < timeout {
		t.Errorf("Stop killed after %v, before the %v timeout", took, timeout)
	}
	tt.checkGone(t, syscall.SIGTERM)
}

// A stopped (SIGSTOP) process cannot act on SIGTERM until continued; Stop
// continues it, and the tree goes down without force.
func TestTreeStopStopped(t *testing.T) {
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	tt := startTree(t, r, "pgrp:sleep:worker", "escape:sleep:escapee")
	for _, tag := range []string{"leader", "worker", "escapee"} {
		ref := tt.procs[tag]
		h := openHandle(t, ref)
		if err := h.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		testproc.Eventually(t, waitLimit, func() bool {
			p, err := Stat(ref.Pid)
			return err == nil && p.State == 'T'
		}, "timed out after %v waiting for %s to stop", waitLimit, tag)
	}
	rep, err := tt.tree.Stop(waitLimit, time.Second)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if want := (StopReport{Terminated: 3}); rep != want {
		t.Errorf("Stop report %+v, want %+v", rep, want)
	}
	tt.checkGone(t, syscall.SIGTERM)
}

// A zero timeout kills at once.
func TestTreeStopNow(t *testing.T) {
	if !isolated(t) {
		return
	}
	r := newTestReaper(t)
	tt := startTree(t, r, "pgrp:sleep:worker")
	// The SIGTERM sent first may win the race with SIGKILL.
	rep, err := tt.tree.Stop(0, waitLimit)
	if err != nil || !rep.Forced || rep.Terminated != 2 {
		t.Fatalf("Stop(0) = %+v, %v; want forced", rep, err)
	}
	for tag, ref := range tt.procs {
		if Alive(ref) {
			t.Errorf("%s survived", tag)
		}
	}
	st := receive(t, "the leader", tt.exit)
	if st.Signal != syscall.SIGKILL && st.Signal != syscall.SIGTERM {
		t.Errorf("leader status %+v, want killed by a signal", st)
	}
}
