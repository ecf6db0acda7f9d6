//go:build unix || windows

package service

import (
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/state"
	"github.com/tether-dev/tether/service/upgrade"
)

// takeOver runs an upgrade's successor: everything it begins with comes
// from the handover record at path (see readHandover), it answers the
// API from the record's rows as soon as nothing before it can go on
// instead (takeoverAPI), and once its controller serves it makes
// sessions of the tethers handed over (attachAll).
func (r *runner) takeOver(path string, began time.Time, beganCPU time.Duration) int {
	p, logf := r.p, r.logf
	served := upgrade.Bound(logf)
	// Agents must not see it.
	os.Unsetenv(upgrade.Env)
	// What is read to take over is garbage at once, and bounded by the
	// record and the config: the collector waits until the API answers
	// and the guardians are taken over.
	gc := debug.SetGCPercent(-1)
	h, err := readHandover(p, path, began, beganCPU, logf)
	if err != nil {
		logf("%v", err)
		return 1
	}
	// A stand-in answered the statuses meanwhile (D217) and handed back
	// the rest, which waits for the controller.
	stoodIn := h.rec.StandIn != 0
	var early *answering
	if !upgrade.Separate {
		// The service before is this process: there is nothing to go
		// back to, and the API answers at once.
		early = r.answerEarly(h)
		// The clients that queued during the handover are answered
		// first, from the rows: the rest of the agents, the config,
		// the state and the controller (some 25 ms of a core for 200
		// agents) wait for the first answer to be out, or answerWait.
		// Where a stand-in answered them, what it held waits for the
		// controller: it goes on at once.
		if !stoodIn {
			select {
			case <-early.srv.Answered():
			case <-time.After(answerWait):
			}
		}
	}
	b, err := h.begin()
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer b.close()
	if early == nil {
		// Past the point of no return of a service before that waits
		// (Windows).
		early = r.answerEarly(h)
	}
	b.early = early
	b.reportStore(logf)
	return r.serve(b, func(c *Controller, srv *localapi.Server) {
		c.setUpgrade(early.upgrade)
		// The bound is for a successor that does not serve: it does
		// once its controller takes every request.
		served()
		// The clients that queued during the handover are answered
		// first: the guardians' tethers are made sessions once the
		// first answer is out, or after attachWait (an actor's
		// commands wait for its session meanwhile). What the service
		// before held for this one to close goes last: the close of a
		// binary an install replaced frees its pages, milliseconds of
		// a core that the first answers need more.
		go func() {
			if !stoodIn {
				select {
				case <-srv.Answered():
				case <-time.After(attachWait):
				}
			}
			attachAll(p, b, logf)
			b.inherit.Served()
			debug.SetGCPercent(gc)
			up, steps := early.upgrade, upgrade.StepsOf(early.upgrade.ID)
			if steps == nil {
				// The next upgrade has begun: up to serving.
				steps = early.steps
			}
			logf("profile %q taken over on %s (upgrade %s in %v: %s) with %s from %s", p.Profile, p.Socket, up.ID, up.Took.Round(time.Microsecond), upgrade.FormatSteps(steps), human.Count(len(b.cfg.Agents), "agent", "agents"), b.cfg.Path)
		}()
	})
}

// answering is the API of a successor that answers before its
// controller runs.
type answering struct {
	api     *takeoverAPI
	srv     *localapi.Server
	served  chan error // Serve's end
	upgrade api.Upgrade
	steps   []upgrade.StepAt // the timeline up to serving
}

// answerEarly serves the API on the listener handed over, from the
// record h read until the controller is given (takeoverAPI.run), once
// the stand-in, if any, has stopped: what it held is served first.
func (r *runner) answerEarly(h *handover) *answering {
	up := h.rec.Upgrade
	up.Took = time.Since(up.Began)
	up.Paused = upgrade.PausedAt()
	svc := ServiceInfo(r.exe, r.version)
	svc.Upgrade = &up
	a := &answering{api: newTakeoverAPI(r.p, svc, h.rows), served: make(chan error, 1), upgrade: up}
	a.srv = localapi.New(a.api, h.listener)
	if h.rec.StandIn != 0 {
		held, err := h.in.Recall()
		if err != nil {
			r.logf("upgrade %s: %v", up.ID, err)
		}
		h.listener.hold(held)
		upgrade.StopAt(upgrade.StepRecalled)
	}
	go func() { a.served <- a.srv.Serve() }()
	upgrade.StopAt(upgrade.StepServing)
	a.steps = upgrade.Steps()
	return a
}

// handover is what an upgrade's successor read of the record, with the
// descriptors it took, and the config and state being read beside.
type handover struct {
	p           Paths
	rec         *upgrade.Record
	rows        []api.Agent           // the agents' rows, which a status answers with
	agents      *upgrade.RecordAgents // the rest of the agents, until decoded
	in          upgrade.Inheritance
	listener    *apiListener
	parseConfig func() (*config.Config, error)
	openStore   func() (*state.Store, error)
}

// readHandover is the first half of begin for an upgrade's successor:
// it reads the handover record at path, decodes the agents' rows and
// takes the descriptors it names; the rest of the agents, the config and
// the state are read beside, for h.begin (on Unix, once the API has
// answered from the rows). A failure here or there is a crash like any
// other: the tethers close with this process, and the guardians tear
// down (I2).
func readHandover(p Paths, path string, began time.Time, beganCPU time.Duration, logf func(string, ...any)) (*handover, error) {
	if err := upgrade.Await(); err != nil {
		return nil, err
	}
	h := &handover{p: p}
	if upgrade.Separate {
		// The state beside the record and the config: all three are
		// only read, and the state needs neither.
		h.readState()
	}
	rec, agents, err := upgrade.Read(path, p.Profile)
	if err != nil {
		return nil, h.fail(err)
	}
	h.rec, h.agents = rec, agents
	if h.rows, err = agents.DecodeRows(); err != nil {
		return nil, h.fail(err)
	}
	if upgrade.Separate {
		// The config beside the agents' decode.
		h.readConfig()
		if err := h.decodeAgents(); err != nil {
			return nil, h.fail(err)
		}
	}
	upgrade.Begin(rec.Upgrade.ID, rec.Upgrade.Began, append(rec.Steps,
		upgrade.StepAt{Step: upgrade.StepRunning, At: began.Sub(rec.Upgrade.Began), CPU: beganCPU},
		upgrade.StepAt{Step: upgrade.StepRead, At: time.Since(rec.Upgrade.Began), CPU: upgrade.ProcessCPU()}))
	in, l, err := upgrade.Inherited(rec, p.Socket)
	if err != nil {
		return nil, h.fail(err)
	}
	upgrade.StopAt(upgrade.StepSuccessor)
	reapLater(rec.Reap, true)
	h.in, h.listener = in, keepAPI(p.Socket, l, logf)
	return h, nil
}

// readState and readConfig begin to read the state and the config, each
// on a goroutine of its own. Where this process is the service before
// (Unix), they begin once the API answers, and leave the cores to the
// agents' decode and the first answers until then; where the service
// before waits (Windows), beside the record's read.
func (h *handover) readState() {
	h.openStore = background(func() (*state.Store, error) { return state.Open(h.p.StateDir, platform.OpenAppendNoFollow) })
}

func (h *handover) readConfig() { h.parseConfig = background(h.rec.ParseConfig) }

// decodeAgents decodes the agents beyond their rows, once.
func (h *handover) decodeAgents() error {
	if h.agents == nil {
		return nil
	}
	err := h.rec.DecodeAgents(h.agents)
	h.agents = nil
	return err
}

// fail waits for what was read beside, closes it and returns err.
func (h *handover) fail(err error) error {
	if h.parseConfig != nil {
		_, _ = h.parseConfig()
	}
	if h.openStore != nil {
		if store, err := h.openStore(); err == nil {
			store.Close()
		}
	}
	return err
}

// begin is the second half: the config and the state, and the point of
// no return, from where this process reads the tethers.
func (h *handover) begin() (*beginning, error) {
	if h.openStore == nil {
		h.readState()
		h.readConfig()
	}
	// Beside the config and the state.
	if err := h.decodeAgents(); err != nil {
		return nil, h.fail(err)
	}
	b := &beginning{lock: h.in.Lock(), listener: h.listener, inherit: h.in, resumed: map[string]resumedAgent{}, leaseID: h.rec.Lease}
	var err error
	if b.cfg, err = h.parseConfig(); err != nil {
		return nil, h.fail(err)
	}
	if b.store, err = h.openStore(); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	upgrade.StopAt(upgrade.StepConfig)
	if err := h.in.Prepared(); err != nil {
		b.store.Close()
		return nil, err
	}
	b.tethers = map[string]*upgrade.Tether{}
	for _, st := range h.rec.Agents {
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
	id := b.early.upgrade.ID // its timeline
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
			upgrade.StopAtOf(id, upgrade.StepAttaching)
		}
	}
	upgrade.StopAtOf(id, upgrade.StepAttached)
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
				upgrade.StopAtOf(id, upgrade.StepAnnounce)
			}
			if i%announceBatch == announceBatch-1 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
}

// A successor on Unix decodes the rest of the agents and reads its config
// and state once it has answered a first request from the record, or
// answerWait after it answers; it makes sessions of the tethers handed
// over once its controller runs and it has answered a first request, or
// attachWait after the controller runs; on Unix it sends attach
// announceDelay after that, to announceBatch guardians at a time.
const (
	answerWait    = 20 * time.Millisecond
	attachWait    = 5 * time.Millisecond
	announceDelay = 100 * time.Millisecond
	announceBatch = 16
)
