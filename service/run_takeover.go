//go:build unix || windows

package service

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/state"
	"github.com/tether-dev/tether/service/upgrade"
)

// takeOver runs an upgrade's successor: everything it begins with comes
// from the handover record at path (see takeOverFrom), and once it
// serves it makes sessions of the tethers handed over (attachAll).
func (r *runner) takeOver(path string, began time.Time) int {
	p, logf := r.p, r.logf
	served := upgrade.Bound(logf)
	// Agents must not see it.
	os.Unsetenv(upgrade.Env)
	// What is read to take over is garbage at once, and bounded by the
	// record and the config: the collector waits until the API answers
	// and the guardians are taken over.
	gc := debug.SetGCPercent(-1)
	b, err := takeOverFrom(p, path, began, logf)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer b.close()
	b.reportStore(logf)
	return r.serve(b, func(c *Controller, srv *localapi.Server) {
		up := *b.upgrade
		up.Took = time.Since(up.Began)
		for _, st := range upgrade.Steps() {
			if st.Step == upgrade.StepPaused {
				up.Paused = st.At
			}
		}
		c.setUpgrade(up)
		served()
		upgrade.StopAt(upgrade.StepServing)
		// The clients that queued during the handover are answered
		// first: the guardians' tethers are made sessions once the
		// first answer is out, or after attachWait (an actor's
		// commands wait for its session meanwhile). What the service
		// before held for this one to close goes last: the close of a
		// binary an install replaced frees its pages, milliseconds of
		// a core that the first answers need more.
		go func() {
			select {
			case <-srv.Answered():
			case <-time.After(attachWait):
			}
			attachAll(p, b, logf)
			b.inherit.Served()
			debug.SetGCPercent(gc)
			logf("profile %q taken over on %s (upgrade %s in %v: %s) with %s from %s", p.Profile, p.Socket, up.ID, up.Took.Round(time.Microsecond), upgrade.FormatSteps(upgrade.Steps()), human.Count(len(b.cfg.Agents), "agent", "agents"), b.cfg.Path)
		}()
	})
}

// takeOverFrom is begin for an upgrade's successor: everything comes from
// the handover record at path. A failure here is a crash like any other:
// the tethers close with this process, and the guardians tear down (I2).
func takeOverFrom(p Paths, path string, began time.Time, logf func(string, ...any)) (*beginning, error) {
	if err := upgrade.Await(); err != nil {
		return nil, err
	}
	// The state beside the record and the config: all three are only
	// read, and the state needs neither.
	openStore := background(func() (*state.Store, error) { return state.Open(p.StateDir, platform.OpenAppendNoFollow) })
	// closeStore is for the failures: they return once it is open.
	closeStore := func() {
		if store, err := openStore(); err == nil {
			store.Close()
		}
	}
	rec, agents, err := upgrade.Read(path, p.Profile)
	if err != nil {
		closeStore()
		return nil, err
	}
	// The config beside the agents' decode.
	parseConfig := background(rec.ParseConfig)
	fail := func(err error) (*beginning, error) {
		_, _ = parseConfig()
		closeStore()
		return nil, err
	}
	if err := rec.DecodeAgents(agents); err != nil {
		return fail(err)
	}
	upgrade.Begin(rec.Upgrade.Began, append(rec.Steps,
		upgrade.StepAt{Step: upgrade.StepRunning, At: began.Sub(rec.Upgrade.Began)},
		upgrade.StepAt{Step: upgrade.StepRead, At: time.Since(rec.Upgrade.Began)}))
	in, l, err := upgrade.Inherited(rec, p.Socket)
	if err != nil {
		return fail(err)
	}
	upgrade.StopAt(upgrade.StepSuccessor)
	reapLater(rec.Reap, true)
	b := &beginning{lock: in.Lock(), listener: keepAPI(p.Socket, l, logf), inherit: in, upgrade: &rec.Upgrade, resumed: map[string]resumedAgent{}, leaseID: rec.Lease}
	if b.cfg, err = parseConfig(); err != nil {
		return fail(err)
	}
	if b.store, err = openStore(); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	upgrade.StopAt(upgrade.StepConfig)
	// The point of no return: from here this process reads the tethers.
	if err := in.Prepared(); err != nil {
		b.store.Close()
		return nil, err
	}
	b.tethers = map[string]*upgrade.Tether{}
	for _, st := range rec.Agents {
		r := resumedAgent{state: st}
		if t := st.Tether; t != nil {
			r.session = make(chan attachResult, 1)
			b.tethers[st.ID] = t
			// Before the adoption of orphans begins.
			upgrade.ClaimGuardian(t)
		}
		b.resumed[st.ID] = r
	}
	return b, nil
}

// background runs f on a goroutine of its own and returns the wait for
// its results, which may be called any number of times.
func background[T any](f func() (T, error)) func() (T, error) {
	done := make(chan struct{})
	var v T
	var err error
	go func() {
		defer close(done)
		v, err = f()
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// reapLater reaps, in the background, the children the service let go
// (see handoverRecord.Reap); claim counts them as this process's own
// first, as a successor after execve must (the service that let them go
// still counts them).
func reapLater(pids []int, claim bool) {
	for _, pid := range pids {
		if claim {
			guardian.ClaimChild(pid)
		}
		if p, err := guardian.ChildProcess(pid); err == nil {
			go func() { _ = p.Wait() }()
		}
	}
}

// attachResult is an agent's tether made a session again, or why not.
type attachResult struct {
	session *guardian.Session
	err     error
}

// attachAll makes sessions of the tethers handed over, each for its
// actor, which waits for it before anything else: the API already
// answers by then, from the rows the record carried. Then each guardian
// is told of its new owner (attach).
func attachAll(p Paths, b *beginning, logf func(string, ...any)) {
	var sessions []*guardian.Session
	n := 0
	for _, a := range b.cfg.Agents {
		t, ok := b.tethers[a.ID]
		if !ok {
			continue
		}
		var s *guardian.Session
		at, err := upgrade.Attachment(a.ID, t)
		if err == nil {
			spec := guardian.Spec{Identity: a.Identity, Profile: p.Profile, StopTimeout: a.StopTimeout}
			s, err = guardian.Attach(spec, at)
		}
		if err != nil {
			// Its guardian sees the tether close and tears down; the
			// agent starts again by its intent.
			logf("taking over the guardian of %q: %v", a.ID, err)
		} else {
			sessions = append(sessions, s)
		}
		b.resumed[a.ID].session <- attachResult{session: s, err: err}
		if n++; n == (len(b.tethers)+1)/2 {
			upgrade.StopAt(upgrade.StepAttaching)
		}
	}
	upgrade.StopAt(upgrade.StepAttached)
	if !upgrade.AttachLater {
		for _, s := range sessions {
			s.SendAttach()
		}
		b.inherit.TookOver(sessions, logf)
		return
	}
	// The guardians need not hear of it at once (the pid is the same):
	// the clients that queued during the handover are answered first,
	// and the guardians are woken a few at a time.
	go func() {
		time.Sleep(announceDelay)
		for i, s := range sessions {
			s.SendAttach()
			if i+1 == (len(sessions)+1)/2 {
				upgrade.StopAt(upgrade.StepAnnounce)
			}
			if i%announceBatch == announceBatch-1 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
}

// A successor makes sessions of the tethers handed over once it has
// answered a first request, or attachWait after it serves; on Unix it
// sends attach announceDelay after that, to announceBatch guardians at a
// time.
const (
	attachWait    = 5 * time.Millisecond
	announceDelay = 100 * time.Millisecond
	announceBatch = 16
)
