//go:build unix

package guardian

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tether-dev/tether/platform"
	punix "github.com/tether-dev/tether/platform/unix"
)

// A guardian killed together with its owner (an OOM kill, a kill -9 of
// both) leaves its tree to no tether process: the tree falls to the
// owner's parent or init, holding its identity, and nothing would stop it
// before the next start of the identity. The owner's other guardians see
// its death at the same moment, through the tether's EOF, and share a
// clock (see ownerEOF); the clock names one of them the delegate
// (punix.SharedClock.Delegate), and the delegate reclaims the trees of
// the guardians of its profile that died with the owner: it stops each
// such tree as a dead guardian's successor would (takeOver), within that
// tree's stop timeout counted from the owner's death (I2), removes its
// private directory and clears its record, and frees the identity. A
// guardian that is alive at the delegate's look and dies within
// reclaimWindow of the owner counts as killed with it: the OOM killer
// and kill(1) reach processes one after the other, and the delegate
// watches the others that long. The others watch the delegate as long:
// when it dies (it may be one of those killed), the next of them takes
// its place. Only when every tether process is killed at once is nobody
// left to do it; the next start of the identity then takes the tree
// over (takeOver).
const reclaimWindow = 250 * time.Millisecond

// reclaimSiblings starts this guardian's part in reclaiming the trees of
// the guardians that died with the owner, whose death was first seen at
// death: it reclaims them as the delegate, or watches the delegate until
// the window closes and takes its place if it dies. The teardown waits
// for it before the guardian exits.
func (g *guardian) reclaimSiblings(death time.Time) {
	g.reclaimMu.Lock()
	defer g.reclaimMu.Unlock()
	if g.req.LockDir == "" || g.reclaimsDone {
		return
	}
	g.reclaims.Add(1)
	go func() {
		defer g.reclaims.Done()
		for {
			d, mine := g.clock.Delegate(os.Getpid(), running)
			if mine {
				g.reclaimDead(death)
				return
			}
			if !waitDeath(d, death.Add(reclaimWindow)) {
				return
			}
		}
	}()
}

// running says whether pid is a live process.
func running(pid int) bool {
	p, err := punix.Stat(pid)
	return err == nil && !p.Zombie()
}

// waitDeath waits until pid exits, and reports whether it did before
// the deadline.
func waitDeath(pid int, deadline time.Time) bool {
	p, err := punix.Stat(pid)
	if err != nil || p.Zombie() {
		return true
	}
	h, err := punix.OpenHandle(p.Ref())
	if err != nil {
		return true
	}
	defer h.Close()
	done, err := punix.WaitExit([]*punix.Handle{h}, max(time.Until(deadline), 0))
	return err == nil && len(done) > 0
}

// reclaimDead reclaims the tree of every guardian of the profile that is
// dead, then watches those still alive until reclaimWindow after the
// owner's death and reclaims the tree of each that dies meanwhile.
func (g *guardian) reclaimDead(death time.Time) {
	var live []*punix.Handle
	var liveKeys []string
	defer func() {
		for _, h := range live {
			h.Close()
		}
	}()
	for _, key := range g.siblingKeys() {
		ref, alive := g.reclaimKey(key, death)
		if !alive || g.clock == nil {
			// Without a shared clock every guardian of the owner
			// is a delegate: one pass each, and no watching of one
			// another.
			continue
		}
		h, err := punix.OpenHandle(ref)
		if err != nil {
			g.reclaimKey(key, time.Now()) // it died since the look
			continue
		}
		live, liveKeys = append(live, h), append(liveKeys, key)
	}
	for len(live) > 0 {
		left := time.Until(death.Add(reclaimWindow))
		if left <= 0 {
			return
		}
		done, err := punix.WaitExit(live, left)
		if err != nil {
			g.logf("watching the owner's other guardians: %v", err)
			return
		}
		seen := time.Now()
		for i := len(done) - 1; i >= 0; i-- {
			k := done[i]
			g.reclaimKey(liveKeys[k], seen)
			live[k].Close()
			live, liveKeys = append(live[:k], live[k+1:]...), append(liveKeys[:k], liveKeys[k+1:]...)
		}
	}
}

// siblingKeys are the keys of the other identities recorded in the lock
// directory.
func (g *guardian) siblingKeys() []string {
	entries, err := os.ReadDir(g.req.LockDir)
	if err != nil {
		g.logf("looking for the owner's other guardians: %v", err)
		return nil
	}
	var keys []string
	for _, e := range entries {
		if key, ok := strings.CutSuffix(e.Name(), ".owner"); ok && key != g.key {
			keys = append(keys, key)
		}
	}
	return keys
}

// reclaimKey reclaims the tree of the identity of key if its record
// names a dead guardian of this guardian's profile, counting its stop
// timeout from since. It returns the guardian the record names when that
// one is alive. A record locked by someone else is theirs: its guardian
// taking or letting go of the identity, or another reclaimer.
func (g *guardian) reclaimKey(key string, since time.Time) (procRef, bool) {
	path := recordPath(g.req.LockDir, key)
	f, err := platform.OpenLockFile(path)
	if err != nil {
		return procRef{}, false
	}
	rf := &recordFile{f: f}
	defer rf.close()
	if platform.TryLock(f) != nil {
		return procRef{}, false
	}
	defer rf.unlock()
	rec, err := rf.read()
	if err != nil || rec == nil || rec.Profile != g.req.Profile || rec.Guardian.Pid <= 0 {
		return procRef{}, false
	}
	if platform.Alive(rec.Guardian) {
		return rec.Guardian, true
	}
	g.reclaimTree(key, rec, rf, since)
	return procRef{}, false
}

// stopAbandoned stops the tree of rec by deadline, as abandonedTree
// finds it, and the grace after. The holders of the lock are looked for
// while the members the record names are already asked to stop: the
// look reads every descriptor of every process, which on a busy system
// takes longer than some stop timeouts.
func stopAbandoned(rec *record, lockPath string, deadline time.Time, grace time.Duration) (punix.StopReport, error) {
	named := abandonedTree(rec, "")
	type result struct {
		rep punix.StopReport
		err error
	}
	held := make(chan result, 1)
	go func() {
		var r result
		if out := outsiders(named, lockPath); len(out.Extra) > 0 {
			r.rep, r.err = out.Stop(max(time.Until(deadline), 0), grace)
		}
		held <- r
	}()
	rep, err := named.Stop(max(time.Until(deadline), 0), grace)
	r := <-held
	rep.Terminated += r.rep.Terminated
	rep.Killed += r.rep.Killed
	rep.Forced = rep.Forced || r.rep.Forced
	return rep, errors.Join(err, r.err)
}

// outsiders is the tree of the holders of the lock at lockPath that
// named does not hold already (in the leader's session or the cgroup):
// members that left both, which only their lock descriptor finds.
func outsiders(named *punix.Tree, lockPath string) *punix.Tree {
	all := abandonedTree(nil, lockPath)
	var inCgroup []int
	if named.Cgroup != nil {
		inCgroup, _ = named.Cgroup.Pids()
	}
	out := &punix.Tree{}
	for _, r := range all.Extra {
		p, err := punix.Stat(r.Pid)
		if err == nil && p.Start == r.Start && (p.Sid == named.Leader.Pid || slices.Contains(inCgroup, r.Pid)) {
			continue
		}
		out.Extra = append(out.Extra, r)
	}
	return out
}

// reclaimTree stops the tree of rec, whose guardian is dead, removes what
// it left and clears the record, holding the identity's lock from the
// moment its tree lets go of it until the record is clear. A tree that
// cannot be stopped keeps its record, for the next start's takeover.
func (g *guardian) reclaimTree(key string, rec *record, rf *recordFile, since time.Time) {
	lockPath := filepath.Join(g.req.LockDir, key+".lock")
	lock, err := platform.OpenLockFile(lockPath)
	if err != nil {
		g.logf("reclaiming the tree of %s: %v", rec.holder(), err)
		return
	}
	defer lock.Close()
	timeout, grace := rec.StopTimeout.Duration(), rec.KillGrace.Duration()
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	if grace <= 0 {
		grace = defaultKillGrace
	}
	g.logf("the guardian of %s died with the owner; stopping its tree", rec.holder())
	rep, err := stopAbandoned(rec, lockPath, since.Add(timeout), grace)
	if err == nil {
		err = lockOnceFree(lock, grace)
	}
	if err != nil {
		g.logf("the tree of %s could not be stopped (%v); the next start of %q takes it over", rec.holder(), err, rec.Identity)
		return
	}
	// As a guardian's own teardown: the directory, then the identity,
	// and the containment, empty now, last: it may wait for the tree's
	// last zombies to be reaped by whoever they fell to.
	g.removeOldDir(rec)
	if err := rf.write(nil); err != nil {
		g.logf("clearing the owner record of %q: %v", rec.Identity, err)
	}
	_ = platform.Unlock(lock)
	g.endDead(rec)
	g.logf("reclaimed the tree of %s %v after the owner's death: %d terminated, %d killed",
		rec.holder(), time.Since(since).Round(time.Millisecond), rep.Terminated, rep.Killed)
	if rec.Cgroup != "" {
		if cg, err := punix.OpenCgroup(rec.Cgroup); err == nil {
			if err := cg.Remove(); err != nil {
				g.logf("removing the cgroup of %s: %v", rec.holder(), err)
			}
		}
	}
}
