//go:build unix

package unix

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Tree is one agent's process tree: the session its leader created, every
// descendant of the subreaper that started it, and its cgroup.
type Tree struct {
	// Leader started the session: the tree's session id is Leader.Pid.
	Leader Ref
	// Root, when not zero, is the subreaper (the guardian) whose
	// descendants all belong to the tree. Zero when taking over a tree
	// whose guardian is gone.
	Root int
	// RootSubreaper says Root is a child subreaper: every descendant,
	// even one that left the session, stays below it, so the tree is
	// found by walking Root's children instead of scanning every process.
	RootSubreaper bool
	// Cgroup holds the tree where cgroup containment is in use.
	Cgroup *Cgroup
	// Extra are further processes known to belong to the tree, such as
	// the holders of its lock found after its guardian died.
	Extra []Ref
	// Reaper is Root's reaper when Root is this process. With
	// RootSubreaper and Cgroup it lets Stop confirm a kill by the
	// kernel's answers alone (see killContained).
	Reaper *Reaper
	// adopted makes Root's descendants only those below the children it
	// adopted, not the ones it started (see Adopter).
	adopted bool
	// found, when set, is called once for each member a stop finds,
	// before it signals it.
	found func(Proc)
}

// TreeAliveError reports processes that were still alive after SIGKILL and
// the grace period: the tree could not be confirmed empty.
type TreeAliveError struct {
	Left []Proc
}

func (e *TreeAliveError) Error() string {
	var b strings.Builder
	for i, p := range e.Left {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d (state %c)", p.Pid, p.State)
	}
	return fmt.Sprintf("%d process(es) still alive after SIGKILL: %s", len(e.Left), b.String())
}

// StopReport says how a tree went down.
type StopReport struct {
	Terminated int  // processes sent SIGTERM
	Killed     int  // processes still there at the deadline and killed
	Forced     bool // the stop timeout ran out
}

// Members returns the live processes of the tree (zombies count as dead),
// never the calling process itself.
func (t *Tree) Members() ([]Proc, error) { return t.scan(true) }

// scan is Members. Below a subreaper Root the members are found by
// walking the kernel's children lists, and one walk can miss a process
// that is being reparented; with agreed the walk is repeated until two
// agree (DescendantProcs). Without it, the members of one walk are
// returned when it finds any, for a stop to signal them a walk sooner;
// a later scan finds what it missed, and an empty tree is only ever
// reported by walks that agree.
func (t *Tree) scan(agreed bool) ([]Proc, error) {
	if t.Root > 0 && t.RootSubreaper {
		procs, err := t.below(agreed)
		if err != nil {
			return nil, err
		}
		return t.withOthers(procs), nil
	}
	procs, err := Processes()
	if err != nil {
		return nil, err
	}
	var cgroup []int
	if t.Cgroup != nil {
		cgroup, _ = t.Cgroup.Pids()
	}
	return t.members(procs, cgroup), nil
}

// withOthers returns the live ones of procs, every process below Root,
// with the cgroup's and Extra's members, which are below Root too unless
// something moved them out: those are looked up one by one. Every
// session member is a descendant.
func (t *Tree) withOthers(procs []Proc) []Proc {
	var set memberSet
	add, in := set.add, set.has
	for _, p := range procs {
		add(p)
	}
	if t.Cgroup != nil {
		pids, _ := t.Cgroup.Pids()
		for _, pid := range pids {
			if !in(pid) {
				if p, err := Stat(pid); err == nil {
					add(p)
				}
			}
		}
	}
	for _, r := range t.Extra {
		if !in(r.Pid) {
			if p, err := Stat(r.Pid); err == nil && p.Start == r.Start {
				add(p)
			}
		}
	}
	return set.out
}

// memberSet collects the members of a scan: each live process once,
// never PID 1 or the calling process.
type memberSet struct {
	in  map[int]bool
	out []Proc
}

func (m *memberSet) add(p Proc) {
	if p.Pid <= 1 || p.Pid == os.Getpid() || p.Zombie() || m.in[p.Pid] {
		return
	}
	if m.in == nil {
		m.in = make(map[int]bool)
	}
	m.in[p.Pid] = true
	m.out = append(m.out, p)
}

func (m *memberSet) has(pid int) bool { return m.in[pid] }

// below returns the processes below the subreaper Root: those of walks
// that agree, or, unless agreed, those of one walk if it found any.
func (t *Tree) below(agreed bool) ([]Proc, error) {
	walk := func() ([]Proc, error) { return walkOnce(t.Root) }
	stable := func() ([]Proc, error) { return DescendantProcs(t.Root) }
	if t.adopted {
		walk, stable = adoptedWalk, adoptedProcs
	}
	if !agreed {
		if procs, err := walk(); err != nil || len(procs) > 0 {
			return procs, err
		}
	}
	return stable()
}

// members picks the tree's members out of procs; cgroup holds the pids
// of the tree's cgroup, read once by the caller for the whole scan.
func (t *Tree) members(procs []Proc, cgroup []int) []Proc {
	byPid := make(map[int]Proc, len(procs))
	for _, p := range procs {
		byPid[p.Pid] = p
	}
	var set memberSet
	add := set.add
	if t.Root > 0 {
		for _, p := range Descendants(procs, t.Root) {
			add(p)
		}
	}
	if t.Leader.Pid > 0 {
		// A session id stays allocated while any member lives, so the
		// members of session Leader.Pid are the tree's unless the
		// leader's PID now names a different process.
		leader, ok := byPid[t.Leader.Pid]
		if !ok || leader.Start == t.Leader.Start {
			for _, p := range procs {
				if p.Sid == t.Leader.Pid {
					add(p)
				}
			}
		}
	}
	for _, pid := range cgroup {
		if p, ok := byPid[pid]; ok {
			add(p)
		}
	}
	for _, r := range t.Extra {
		if p, ok := byPid[r.Pid]; ok && p.Start == r.Start {
			add(p)
		}
	}
	return set.out
}

// Stop takes the tree down: SIGTERM (and SIGCONT, so a stopped process can
// act on it) to every member, a wait of up to timeout that wakes on each
// exit, then SIGKILL for what is left (cgroup.kill, or SIGSTOP to every
// member until the set is stable and then SIGKILL), and a wait of up to
// grace for the kernel to finish. It returns a *TreeAliveError when
// members remain.
func (t *Tree) Stop(timeout, grace time.Duration) (StopReport, error) {
	s := &treeStop{t: t, hs: newHandles(), killed: make(map[Ref]bool)}
	defer s.hs.close()
	if empty, err := s.terminate(time.Now().Add(timeout)); empty || err != nil {
		return s.rep, err
	}
	s.rep.Forced = true
	graceEnd := time.Now().Add(grace)
	if s.killContained(graceEnd) || s.killKnown(graceEnd) {
		return s.rep, nil
	}
	if err := s.killCgroup(); err != nil {
		return s.rep, err
	}
	if err := s.freeze(); err != nil {
		return s.rep, err
	}
	return s.rep, s.kill(graceEnd)
}

// killContained kills a tree the kernel can vouch for: one in a cgroup
// of its own, below this process as a child subreaper. cgroup.kill ends
// every process in the cgroup at once, whatever it forks meanwhile; the
// members asked to stop before (which may have left the cgroup) get a
// SIGKILL each; and the tree is gone once this process has no child left
// and the cgroup counts no process. Those are the kernel's answers, with
// no scan of /proc: when hundreds of guardians kill their trees at the
// same moment (their owner died), the scans were most of the work.
//
// It reports false when the tree is not such a tree, cgroup.kill cannot
// be written, or the two answers do not both come within the grace:
// Stop then goes on with the scanning kill, which does everything again.
func (s *treeStop) killContained(graceEnd time.Time) bool {
	t := s.t
	if t.Cgroup == nil || t.Reaper == nil || !t.RootSubreaper || t.Root != os.Getpid() {
		return false
	}
	// Only for the report: the cgroup's own list, one read, not a walk
	// of the cgroups below it.
	pids, _ := t.Cgroup.ownPids()
	if t.Cgroup.Kill() != nil {
		return false
	}
	killed := make(map[int]bool, len(pids))
	for _, pid := range pids {
		killed[pid] = true
	}
	for r, h := range s.hs {
		if h != nil && !s.killed[r] && h.Signal(syscall.SIGKILL) == nil {
			s.killed[r] = true
			killed[r.Pid] = true
		}
	}
	s.rep.Killed += len(killed)
	// Their memory is freed here and now, not when each is scheduled
	// to exit: on a loaded machine that wait took most of I2's margin.
	for _, h := range s.hs.live() {
		_ = h.ReleaseMemory()
	}
	// The members it holds a pidfd for first: their exits end one
	// poll(2) here, where waiting on SIGCHLD would wake the reaper for
	// each. The rest, if any, is the reaper's.
	_ = waitAll(s.hs.live(), graceEnd)
	if !t.Reaper.WaitChildless(graceEnd) {
		return false
	}
	populated, err := t.Cgroup.Populated()
	return err == nil && !populated
}

// killKnown kills, at once and with no scan first, what a tree that is
// not below this process is known to hold: the members asked to stop
// (through their pidfds) and its cgroup. Each scan of such a tree is a
// walk of every process of the system, and the freeze and kill that
// follow make several: a tree its guardian left (taken over, or
// reclaimed after the guardian died) was killed that long past its stop
// timeout. It reports true when, once those members have exited, one
// scan finds the tree empty: a process it does not find was neither a
// member nor forked by one (a process with SIGKILL pending forks no
// more, and a child forked before is alive, and found). Otherwise, and
// for a tree below this process, Stop goes on with the freeze and kill.
func (s *treeStop) killKnown(graceEnd time.Time) bool {
	t := s.t
	if t.Root > 0 && t.RootSubreaper {
		return false
	}
	// The members first, then the cgroup: a member the cgroup's kill
	// reached first could no longer be signalled, and the report would
	// not count it as killed.
	var known []*Handle
	for r, h := range s.hs {
		if h == nil {
			continue
		}
		known = append(known, h)
		if !s.killed[r] && h.Signal(syscall.SIGKILL) == nil {
			s.killed[r] = true
			s.rep.Killed++
		}
	}
	if t.Cgroup != nil {
		_ = t.Cgroup.Kill()
	}
	for _, h := range known {
		_ = h.ReleaseMemory() // as in killContained
	}
	if waitAll(known, graceEnd) != nil {
		return false
	}
	ms, err := t.scan(true)
	return err == nil && len(ms) == 0
}

// treeStop is one Stop under way: the handles it opened, what it has
// killed, and its report.
type treeStop struct {
	t      *Tree
	hs     handles
	killed map[Ref]bool
	rep    StopReport
}

// terminate sends SIGTERM and SIGCONT to every member, once each, until
// the tree is empty (empty is true) or the deadline passes. Its first
// scan signals what one walk finds (see scan).
func (s *treeStop) terminate(deadline time.Time) (empty bool, err error) {
	termed := make(map[Ref]bool)
	// The cgroup's members are one read away, and they are the tree
	// unless something moved one out: they get their SIGTERM before
	// the walk that finds the rest.
	s.termAll(s.t.cgroupMembers(), termed)
	for first := true; ; first = false {
		ms, err := s.t.scan(!first)
		if err != nil {
			return false, err
		}
		if len(ms) == 0 {
			return true, nil
		}
		s.termAll(ms, termed)
		if !time.Now().Before(deadline) {
			return false, nil
		}
		// Wait for everyone signalled, not just the first, before
		// scanning again: a polite tree then costs one more scan, not
		// one per member.
		if err := waitAll(s.hs.of(ms), deadline); err != nil {
			return false, err
		}
		if !time.Now().Before(deadline) {
			// What is left is the kill's: a SIGTERM now would
			// come a moment before the SIGKILL.
			return false, nil
		}
	}
}

// termAll sends SIGTERM and SIGCONT to the members of ms not in termed
// yet, and adds them. All are looked at before any is signalled: one's
// SIGTERM may take another down.
func (s *treeStop) termAll(ms []Proc, termed map[Ref]bool) {
	fresh := make([]Proc, 0, len(ms))
	for _, p := range ms {
		if !termed[p.Ref()] {
			termed[p.Ref()] = true
			fresh = append(fresh, p)
		}
	}
	if s.t.found != nil {
		for _, p := range fresh {
			s.t.found(p)
		}
	}
	for _, p := range fresh {
		s.rep.Terminated++
		s.hs.signal(p, syscall.SIGTERM)
		s.hs.signal(p, syscall.SIGCONT)
	}
}

// cgroupMembers returns the live processes of the tree's cgroup, none
// when it has no cgroup or it cannot be read (a scan then finds them).
func (t *Tree) cgroupMembers() []Proc {
	if t.Cgroup == nil {
		return nil
	}
	pids, err := t.Cgroup.Pids()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	out := make([]Proc, 0, len(pids))
	for _, pid := range pids {
		if p, err := Stat(pid); err == nil && pid > 1 && pid != self && !p.Zombie() {
			out = append(out, p)
		}
	}
	return out
}

// killAll sends SIGKILL to the members not killed yet.
func (s *treeStop) killAll(ms []Proc) {
	for _, p := range ms {
		if !s.killed[p.Ref()] {
			s.killed[p.Ref()] = true
			s.rep.Killed++
			s.hs.signal(p, syscall.SIGKILL)
		}
	}
}

// killCgroup kills the cgroup, if the tree has one. cgroup.kill is safe
// against concurrent forks. Members outside the cgroup (or all of them,
// if the write fails) still get a SIGKILL of their own.
func (s *treeStop) killCgroup() error {
	if s.t.Cgroup == nil {
		return nil
	}
	ms, err := s.t.Members()
	if err != nil {
		return err
	}
	_ = s.t.Cgroup.Kill()
	s.killAll(ms)
	return nil
}

// freeze sends SIGSTOP to every member until no new one appears, so
// nothing forks between the last scan and the kill.
func (s *treeStop) freeze() error {
	stopped := make(map[Ref]bool)
	for range 50 {
		ms, err := s.t.Members()
		if err != nil {
			return err
		}
		fresh := 0
		for _, p := range ms {
			if !stopped[p.Ref()] {
				stopped[p.Ref()] = true
				fresh++
				s.hs.signal(p, syscall.SIGSTOP)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}

// kill sends SIGKILL to every member and waits for the tree to empty
// until graceEnd; what is left then is a *TreeAliveError.
func (s *treeStop) kill(graceEnd time.Time) error {
	for {
		ms, err := s.t.Members()
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		s.killAll(ms)
		left := time.Until(graceEnd)
		if left <= 0 {
			return &TreeAliveError{Left: ms}
		}
		if err := waitAny(s.hs.of(ms), left); err != nil {
			return err
		}
	}
}

// waitAll waits until every one of hs has exited or the deadline passes.
func waitAll(hs []*Handle, deadline time.Time) error {
	if len(hs) == 0 {
		time.Sleep(min(time.Until(deadline), time.Millisecond))
		return nil
	}
	for len(hs) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		done, err := WaitExit(hs, left)
		if err != nil {
			return err
		}
		for i := len(done) - 1; i >= 0; i-- {
			hs = append(hs[:done[i]], hs[done[i]+1:]...)
		}
	}
	return nil
}

// waitAny waits for one of hs to exit. When none of the members could be
// opened (they exited between the scan and the open), it yields briefly
// instead of spinning.
func waitAny(hs []*Handle, left time.Duration) error {
	if len(hs) == 0 {
		time.Sleep(min(left, time.Millisecond))
		return nil
	}
	_, err := WaitExit(hs, left)
	return err
}

// handles caches one Handle per process for the length of a Stop.
type handles map[Ref]*Handle

func newHandles() handles { return make(handles) }

func (hs handles) get(p Proc) *Handle {
	r := p.Ref()
	if h, ok := hs[r]; ok {
		return h
	}
	h, err := OpenHandle(r)
	if err != nil {
		hs[r] = nil
		return nil
	}
	hs[r] = h
	return h
}

func (hs handles) signal(p Proc, sig syscall.Signal) {
	if h := hs.get(p); h != nil {
		if err := h.Signal(sig); err != nil && !errors.Is(err, ErrNoProcess) {
			return
		}
	}
}

func (hs handles) of(ms []Proc) []*Handle {
	out := make([]*Handle, 0, len(ms))
	for _, p := range ms {
		if h := hs.get(p); h != nil {
			out = append(out, h)
		}
	}
	return out
}

// live returns the handles that were opened, of live processes or not.
func (hs handles) live() []*Handle {
	out := make([]*Handle, 0, len(hs))
	for _, h := range hs {
		if h != nil {
			out = append(out, h)
		}
	}
	return out
}

func (hs handles) close() {
	for _, h := range hs {
		if h != nil {
			h.Close()
		}
	}
}
