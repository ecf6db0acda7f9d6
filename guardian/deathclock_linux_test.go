package guardian

import (
	"syscall"
	"testing"
	"time"

	punix "github.com/tether-dev/tether/platform/unix"
	"golang.org/x/sys/unix"
)

// The guardians of one owner count from the first of them to see its
// death; a time older than deathWindow is another death's.
func TestDeathClockCountsFromTheFirst(t *testing.T) {
	f := ownerDeathFile()
	if f == nil {
		t.Skip("no memfd here")
	}
	mapped := func() *deathClock {
		mem, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Munmap(mem) })
		return &deathClock{mem: mem}
	}
	a, b := mapped(), mapped()
	for i := range a.mem {
		a.mem[i] = 0
	}
	t0 := time.Now()
	if got := a.first(t0); !got.Equal(t0) {
		t.Fatalf("the first to see it: %v, want its own time %v", got, t0)
	}
	time.Sleep(50 * time.Millisecond)
	t1 := time.Now()
	if got := b.first(t1); got.After(t0.Add(5*time.Millisecond)) || got.Before(t0.Add(-5*time.Millisecond)) {
		t.Fatalf("a later one: %v (%v after its own), want about the first's %v", got, t1.Sub(got), t0)
	}
	time.Sleep(deathWindow + 50*time.Millisecond)
	t2 := time.Now()
	if got := b.first(t2); !got.Equal(t2) {
		t.Fatalf("long after: %v, want its own time %v", got, t2)
	}
}

// A guardian that sees its owner's death late (here stopped by SIGSTOP
// at the time, as one scheduled late on a busy machine would be) still
// kills its tree a stop timeout after the death, as the first of its
// owner's guardians to see it, and not a stop timeout after its own
// late EOF; the tree still gets its whole stop timeout from the death.
func TestLateGuardianCountsFromTheOwnersDeath(t *testing.T) {
	e := newWorld(t)
	o := e.newOwner()
	timeout := time.Second
	var late *Ready
	for _, id := range []string{"death-first", "death-late"} {
		spec := e.spec(id, "stubborn")
		spec.StopTimeout = timeout
		late = o.start(spec)
	}
	e.waitAnnounced(map[string]int{"leader": 2, "worker": 2})
	leader, err := punix.Stat(late.AgentPID)
	if err != nil {
		t.Fatal(err)
	}
	tree := &punix.Tree{Leader: leader.Ref(), Root: late.GuardianPID, RootSubreaper: true}
	ms, err := tree.Members()
	if err != nil || len(ms) != 2 {
		t.Fatalf("the late guardian's tree: %v %v", ms, err)
	}
	var rs []procRef
	for _, m := range ms {
		rs = append(rs, m.Ref())
	}
	if err := syscall.Kill(late.GuardianPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitState(t, late.GuardianPID, 'T')
	begin := time.Now()
	o.kill()
	time.Sleep(400*time.Millisecond - time.Since(begin))
	if err := syscall.Kill(late.GuardianPID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Counted from its own EOF, 400 ms late, the kill would come 1.4 s
	// after the death.
	bound := timeout + 250*time.Millisecond
	var dead time.Duration
	for {
		reapAdopted()
		if dead == 0 && len(alive(rs)) == 0 {
			dead = time.Since(begin)
		}
		if dead != 0 && gone(late.PrivateDir) && lockFree(t, late.LockPath) {
			break
		}
		if time.Since(begin) > bound {
			t.Fatalf("%v after the owner's death: alive %v, private dir gone %v\nlog:\n%s", bound, alive(rs), gone(late.PrivateDir), e.log())
		}
		time.Sleep(time.Millisecond)
	}
	if dead < timeout {
		t.Fatalf("the late guardian's tree was dead %v after the owner's death, before its stop timeout of %v", dead, timeout)
	}
	t.Logf("the late guardian's tree dead %v after the owner's death, all cleaned %v after", dead, time.Since(begin))
}
