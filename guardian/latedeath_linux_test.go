package guardian

import (
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	punix "github.com/tether-dev/tether/platform/unix"
	"github.com/tether-dev/tether/wire"
)

// A guardian that sees its owner's death late (here stopped by SIGSTOP
// at the time, as one scheduled late on a busy machine would be) still
// kills its tree a stop timeout after the death, as the first of its
// owner's guardians to see it, and not a stop timeout after its own
// late EOF; the tree still gets its whole stop timeout from the death.
func TestLateGuardianCountsFromTheOwnersDeath(t *testing.T) {
	e := newWorld(t)
	o := e.newOwner()
	timeout := time.Second
	var late *wire.Ready
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
	if !testproc.UntilEvery(time.Until(begin.Add(bound)), time.Millisecond, func() bool {
		reapAdopted()
		if dead == 0 && len(alive(rs)) == 0 {
			dead = time.Since(begin)
		}
		return dead != 0 && gone(late.PrivateDir) && lockFree(t, late.LockPath)
	}) {
		t.Fatalf("%v after the owner's death: alive %v, private dir gone %v\nlog:\n%s", bound, alive(rs), gone(late.PrivateDir), e.log())
	}
	if dead < timeout {
		t.Fatalf("the late guardian's tree was dead %v after the owner's death, before its stop timeout of %v", dead, timeout)
	}
	t.Logf("the late guardian's tree dead %v after the owner's death, all cleaned %v after", dead, time.Since(begin))
}
