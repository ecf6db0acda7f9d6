package guardian

import (
	"syscall"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
)

// I2 when the owner and one of its guardians are SIGKILLed at the same
// moment: the dead guardian's tree falls to no tether process, and the
// owner's other guardian, which sees the same death, stops it within its
// stop timeout plus 100 ms, removes its private directory and frees its
// identity, as it does its own.
func TestI2OwnerKilledWithAGuardian(t *testing.T) {
	bothContainments(t, func(t *testing.T, noCgroup bool) {
		e := newWorld(t)
		o := e.newOwner()
		// The dead guardian's tree falls to this process, a subreaper.
		t.Cleanup(reapAdopted)
		orphan := e.spec("killed-with-owner", "stubborn")
		orphan.NoCgroup = noCgroup
		orphan.StopTimeout = 300 * time.Millisecond
		other := e.spec("sees-it-die", "sleeper")
		other.NoCgroup = noCgroup
		other.StopTimeout = 300 * time.Millisecond
		ro, rb := o.start(orphan), o.start(other)
		rs := refs(t, e.waitAnnounced(map[string]int{"leader": 1, "worker": 1, "sleeper": 1}))
		for _, r := range rs {
			expectAdopted(r.Pid)
		}
		for _, pid := range []int{ro.GuardianPID, rb.GuardianPID} {
			g, err := refOf(pid)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, g)
		}
		begin := time.Now()
		if err := o.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(ro.GuardianPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = o.cmd.Wait()
		bound := orphan.StopTimeout + 100*time.Millisecond
		free := func() bool {
			return gone(ro.PrivateDir) && lockFree(t, ro.LockPath) && gone(rb.PrivateDir) && lockFree(t, rb.LockPath)
		}
		if !testproc.UntilEvery(time.Until(begin.Add(bound)), 200*time.Microsecond, func() bool {
			reapAdopted()
			return free() && len(alive(rs[:3])) == 0
		}) {
			a, d, l := alive(rs[:3]), gone(ro.PrivateDir), lockFree(t, ro.LockPath)
			testproc.Until(5*time.Second, free)
			t.Fatalf("I2 breached: %v after the owner and a guardian were killed: alive %v, private dir gone %v, lock free %v (all of it %v after)\nlog:\n%s",
				bound, a, d, l, time.Since(begin), e.log())
		}
		t.Logf("the dead guardian's tree reclaimed %v after the SIGKILLs", time.Since(begin))
		// The containment goes last, once the identity is free.
		if ro.Cgroup != "" {
			testproc.Eventually(t, 2*time.Second, func() bool {
				reapAdopted()
				return gone(ro.Cgroup)
			}, "the dead guardian's cgroup %s is left", ro.Cgroup)
		}
		// Its record is cleared: the next start finds nothing to take
		// over.
		if h, err := Inspect(e.locks, orphan.Identity); err != nil || h != nil {
			t.Errorf("Inspect after the reclaim: %+v, %v", h, err)
		}
		waitGone(t, rs[3:], 5*time.Second)
		next := e.start(e.spec("killed-with-owner", "sleeper"))
		if next.Ready().TookOver != nil {
			t.Errorf("the next start took over %+v: the reclaim left the identity held", next.Ready().TookOver)
		}
	})
}
