package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/state"
	"github.com/tether-dev/tether/service/upgrade"
)

// Options configure a Controller.
type Options struct {
	Paths      Paths
	Executable string   // the tether binary: guardians and a bare "tether" argv[0]
	BaseEnv    []string // the environment agents start from; nil means os.Environ()
	// Orphans, when set, stops what a dead guardian's tree left with the
	// service (see Orphans); the service's Run sets it.
	Orphans Orphans
	// ContentionWindow is how long a start that finds its identity held
	// is retried; zero means DefaultContentionWindow. (The restart
	// policy's numbers are each agent's, in the config.)
	ContentionWindow time.Duration

	// Logf writes a line to the service's log; nil: nowhere.
	Logf func(format string, args ...any)

	// resumed is what an upgrade's successor takes over, by agent id:
	// the agents start from it instead of from intent.
	resumed map[string]resumedAgent
	// leaseID is the etcd lease the service before renewed, for its
	// successor to resume; zero for none.
	leaseID int64
}

// resumedAgent is an agent handed over by the service before: what it
// knew, and, when its guardian runs, where the session of its tether
// attached again comes (the actor waits for it before anything else).
type resumedAgent struct {
	state   upgrade.Agent
	session chan attachResult
}

// DefaultContentionWindow is how long a start that finds its identity
// held is retried.
const DefaultContentionWindow = 30 * time.Second

// Controller owns the agents of one profile.
type Controller struct {
	opts  Options
	store *state.Store

	mu    sync.Mutex
	cfg   *config.Config
	deps  depGraph // cfg's dependencies, both ways
	sweep sweep    // the trees that outlived the service before and no entry claims
	// restarting counts, by agent id, the restarts into a changed
	// config entry under way (see Reload).
	restarting map[string]int
	configErr  *api.Error
	actors     map[string]*actor
	rows       map[string]api.Agent
	trees      map[string]platform.Tree // of the agents whose session runs, for StatusWithUsage
	subs       map[*subscriber]struct{}
	closing    bool
	quitAsked  bool
	sleep      sleepState // the machine's suspends (see Slept)

	// leases holds the identities in etcd; nil without a lease section,
	// and then no etcd code runs.
	leases *leases

	orphanMu sync.Mutex     // one stop of orphans at a time
	pool     *guardian.Pool // a guardian started ahead of each start
	service  api.Service    // the process and its binary, for Status
	upgrades chan upgradeCall
	stopping chan struct{} // closed when the first shutdown begins
	quit     chan struct{} // closed when Quit is accepted
	done     chan struct{} // closed once the shutdown is over; see Done
	runs     chan stateWrite
	runsDone chan struct{}

	// intentMu orders the saves of intent (setEnabled, saveUnsaved), so
	// a retry never writes an older intent over a newer one; unsaved
	// (under mu) is the intent that could not be saved yet, by agent.
	intentMu    sync.Mutex
	unsaved     map[string]unsavedIntent
	intentRetry chan struct{} // see retryIntents
}

// successorPoolDelay is how long an upgrade's successor waits before it
// starts guardians ahead of need: its first work is to answer.
const successorPoolDelay = time.Second

func newPool(opts Options) *guardian.Pool {
	if opts.resumed != nil {
		return guardian.NewPoolAfter(opts.Executable, successorPoolDelay)
	}
	return guardian.NewPool(opts.Executable)
}

// ErrShutdownRefused: agents could not be confirmed stopped; a second
// Quit exits anyway.
var ErrShutdownRefused = errors.New("shutdown refused once: agents could not be confirmed stopped")

// NewController builds the controller for cfg and store and starts the
// enabled agents. A malformed state file does not stop it: the agents
// then start as their config's autostart says, intent is not saved, and
// Status reports the state error.
func NewController(opts Options, cfg *config.Config, store *state.Store) *Controller {
	if opts.BaseEnv == nil {
		opts.BaseEnv = os.Environ()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.ContentionWindow, DefaultContentionWindow)
	c := &Controller{
		opts:       opts,
		store:      store,
		cfg:        cfg,
		deps:       newDepGraph(cfg),
		restarting: map[string]int{},
		sweep:      sweep{listed: make(chan struct{}), stopped: map[string]chan struct{}{}},
		actors:     map[string]*actor{},
		rows:       map[string]api.Agent{},
		trees:      map[string]platform.Tree{},
		subs:       map[*subscriber]struct{}{},
		quit:       make(chan struct{}),
		done:       make(chan struct{}),
		upgrades:   make(chan upgradeCall),
		stopping:   make(chan struct{}),
		pool:       newPool(opts),
		runs:       make(chan stateWrite, runWriteBuffer),
		runsDone:   make(chan struct{}),

		unsaved:     map[string]unsavedIntent{},
		intentRetry: make(chan struct{}, 1),
	}
	if cfg.Lease != nil {
		c.leases = newLeases(cfg.Lease, opts.Paths.Profile, opts.leaseID, opts.Logf)
	}
	go c.writeRuns()
	go c.retryIntents()
	if opts.resumed != nil {
		// An upgrade's successor takes over the trees as they were.
		close(c.sweep.listed)
		c.resumeAll(cfg)
		return c
	}
	go c.sweepUnclaimed(cfg)
	st := store.State()
	enabled := map[string]bool{}
	parked := map[string]*state.Parked{}
	var autostarted, unparked []string
	for _, a := range cfg.Agents {
		s, ok := st.Agents[a.ID]
		switch {
		case ok && store.Err() == nil:
			enabled[a.ID] = s.Enabled
			if parked[a.ID] = parkedFor(s, a); parked[a.ID] == nil && s.Parked != nil {
				unparked = append(unparked, a.ID)
			}
		case a.Autostart:
			enabled[a.ID] = true
			autostarted = append(autostarted, a.ID)
		}
	}
	// Autostart counts as intent: recorded (in one write for all), so the
	// first run record written cannot read as "disabled". A parking
	// whose config entry has changed since is over, and goes in the same
	// write.
	if len(autostarted) > 0 || len(unparked) > 0 {
		_ = store.Update(func(s *state.State) {
			if s.Agents == nil {
				s.Agents = map[string]state.Agent{}
			}
			for _, id := range autostarted {
				ag := s.Agents[id]
				ag.Enabled = true
				s.Agents[id] = ag
			}
			for _, id := range unparked {
				if ag, ok := s.Agents[id]; ok {
					ag.Parked = nil
					s.Agents[id] = ag
				}
			}
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range cfg.Agents {
		c.addLocked(a, enabled[a.ID], parked[a.ID])
	}
	return c
}

// parkedFor returns the parking of an agent whose durable record is s
// and whose config entry is a, when it still holds: the agent is enabled
// and its entry is the one that was parked. Otherwise nil: an entry
// changed since (while the service was down) starts afresh.
func parkedFor(s state.Agent, a config.Agent) *state.Parked {
	if s.Parked == nil || !s.Enabled || s.Parked.Config != a.Fingerprint() {
		return nil
	}
	return s.Parked
}

// saveParked records, durably and before it returns, that agent id is
// parked (p) or no longer is (nil). A failure is the state file's, which
// Err reports; the agent is parked in memory all the same.
func (c *Controller) saveParked(id string, p *state.Parked) {
	_ = c.store.Update(func(s *state.State) {
		if s.Agents == nil {
			s.Agents = map[string]state.Agent{}
		}
		ag, ok := s.Agents[id]
		if !ok && p == nil {
			return
		}
		ag.Parked = p
		s.Agents[id] = ag
	})
}

// addLocked adds an agent's actor and starts it when enabled, unless it
// is parked (see parkedFor).
func (c *Controller) addLocked(a config.Agent, enabled bool, parked *state.Parked) {
	act := newActor(c, a, parked)
	if enabled && parked == nil {
		// Until its actor takes the start, the row already says what
		// is under way: a status answered meanwhile never shows an
		// enabled agent as stopped and disabled.
		act.want = true
		act.row.State, act.row.Enabled = api.StateStarting, true
	}
	c.actors[a.ID] = act
	c.rows[a.ID] = act.row
	// Not to run: a tree that outlived the service before is stopped.
	act.adoptIdle = !enabled
	go act.run()
	if parked != nil {
		return
	}
	if enabled {
		act.send(command{kind: cmdStart})
	}
}

func (c *Controller) logf(format string, args ...any) { c.opts.Logf(format, args...) }

// Stopping is closed when the service begins to stop every agent (a
// shutdown, refused or not).
func (c *Controller) Stopping() <-chan struct{} { return c.stopping }

// Done is closed once a shutdown (Quit, or Shutdown) is over: every
// agent stopped and every run record written, so the process may exit.
func (c *Controller) Done() <-chan struct{} { return c.done }

// Status implements localapi.Backend.
func (c *Controller) Status() api.Status {
	// Read before taking c.mu: the state file's error never waits on the
	// controller, nor the controller on a write.
	stateErr := c.store.Err()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statusLocked(stateErr)
}

// statusLocked is Status, with c.mu held and the state file's error read
// before.
func (c *Controller) statusLocked(stateErr error) api.Status {
	p := c.opts.Paths
	st := api.Status{Profile: p.Profile, ServicePID: os.Getpid(), ConfigPath: p.Config, ConfigGiven: p.ConfigSet, ConfigError: c.configErr}
	if c.service.Version != "" {
		svc := c.service
		st.Service = &svc
	}
	for _, a := range c.cfg.Agents {
		if row, ok := c.rows[a.ID]; ok {
			st.Agents = append(st.Agents, row)
		}
	}
	if stateErr != nil {
		st.StateError = &api.Error{Code: api.CodeState, Message: stateErr.Error()}
	}
	return st
}

func (c *Controller) actor(id string) (*actor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.actors[id]; ok {
		return a, nil
	}
	return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no agent %q in %s", id, c.cfg.Path)}
}

// setEnabled records intent durably: one line appended to the intent
// journal, which does not wait behind a write of run records. An intent
// that cannot be saved stays on the agent's row (IntentError) and is
// retried (see retryIntents) until it is.
func (c *Controller) setEnabled(id string, enabled bool) error {
	c.intentMu.Lock()
	defer c.intentMu.Unlock()
	return c.saveIntent(id, enabled)
}

// Start implements localapi.Backend: enable, then start.
func (c *Controller) Start(ctx context.Context, id string, noWait bool) (api.Agent, error) {
	a, err := c.actor(id)
	if err != nil {
		return api.Agent{}, err
	}
	// The durable enable and the start go on at once.
	wait := a.begin(ctx, command{kind: cmdStart, noWait: noWait})
	serr := c.setEnabled(id, true)
	err = wait()
	row := c.row(id)
	if err == nil && serr != nil {
		// It runs, but the intent could not be saved: say so.
		err = serr
	}
	return row, err
}

// Stop implements localapi.Backend: it attempts both the stop and the
// durable disable. When both fail, the cleanup error wins.
func (c *Controller) Stop(ctx context.Context, id string) (api.Agent, error) {
	a, err := c.actor(id)
	if err != nil {
		return api.Agent{}, err
	}
	// The durable disable goes on while the tree is stopped: the sync
	// of the intent never delays the stop.
	serrc := make(chan error, 1)
	go func() { serrc <- c.setEnabled(id, false) }()
	err = c.stopDependents(ctx, id)
	if derr := a.do(ctx, cmdStop); derr != nil {
		err = derr
	}
	if serr := <-serrc; err == nil {
		err = serr
	}
	return c.row(id), err
}

// Restart implements localapi.Backend: enable, stop, start.
func (c *Controller) Restart(ctx context.Context, id string, noWait bool) (api.Agent, error) {
	a, err := c.actor(id)
	if err != nil {
		return api.Agent{}, err
	}
	serr := c.setEnabled(id, true)
	err = a.begin(ctx, command{kind: cmdRestart, noWait: noWait})()
	if err == nil {
		err = serr
	}
	return c.row(id), err
}

func (c *Controller) row(id string) api.Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows[id]
}

// Logs implements localapi.Backend.
func (c *Controller) Logs(id string, n int) ([]string, error) {
	if _, err := c.actor(id); err != nil {
		return nil, err
	}
	return tailLines(c.opts.Paths.LogPath(id), n)
}

// Shutdown stops every agent, leaving intent as it is. A stop confirmed
// with a cleanup warning does not block it; an unconfirmed one is
// reported and refuses the shutdown once (force skips that).
func (c *Controller) Shutdown(ctx context.Context, force bool) error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		return nil
	}
	acts := make([]*actor, 0, len(c.actors))
	for _, a := range c.actors {
		acts = append(acts, a)
	}
	again := c.quitAsked
	if !c.quitAsked {
		close(c.stopping)
	}
	c.quitAsked = true
	c.mu.Unlock()
	var failed []string
	var mu sync.Mutex
	c.stopInOrder(acts, func(a *actor) {
		if err := a.do(ctx, cmdShutdown); err != nil {
			mu.Lock()
			failed = append(failed, fmt.Sprintf("%s: %v", a.id, err))
			mu.Unlock()
		}
	})
	// Normally none: each is stopped when its guardian's loss is seen.
	if _, err := c.stopOrphans(c.longestStopTimeout()); err != nil {
		failed = append(failed, "processes left by dead guardians: "+err.Error())
	}
	if len(failed) > 0 && !force && !again {
		sort.Strings(failed)
		return fmt.Errorf("%w: %s", ErrShutdownRefused, strings.Join(failed, "; "))
	}
	c.mu.Lock()
	first := !c.closing
	if first {
		c.closing = true
		close(c.quit)
	}
	c.mu.Unlock()
	if first && len(failed) == 0 && c.leases != nil {
		// Every tree is dead: the identities are free at once, not when
		// the lease expires.
		c.leases.close()
	}
	<-c.runsDone
	if first {
		// One last try for what could not be saved; the retries end
		// with the quit.
		c.intentMu.Lock()
		c.saveUnsaved()
		c.intentMu.Unlock()
		c.pool.Close()
		close(c.done)
	}
	<-c.done
	return nil
}

// stopOrphans stops what dead guardians' trees left with the service, one
// caller at a time. It returns nil when there is nothing to stop.
func (c *Controller) stopOrphans(timeout time.Duration) (*OrphanReport, error) {
	if c.opts.Orphans == nil {
		return nil, nil
	}
	c.orphanMu.Lock()
	defer c.orphanMu.Unlock()
	return c.opts.Orphans.Stop(timeout)
}

func (c *Controller) longestStopTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := guardian.DefaultStopTimeout
	for _, a := range c.cfg.Agents {
		d = max(d, a.StopTimeout)
	}
	return d
}

// Quit implements localapi.Backend: a shutdown that an unconfirmed stop
// refuses once, with the reason; asking again exits anyway.
func (c *Controller) Quit(ctx context.Context) error {
	// A client that goes away must not leave a shutdown half done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := c.Shutdown(ctx, false); err != nil {
		return &api.Error{Code: api.CodeCleanupFailed, Message: err.Error() + " (quit again to exit anyway)"}
	}
	return nil
}

// runWrites carries last-run records to writeRuns. They are batched: 200
// agents starting together cost a few writes of the state file, not 200,
// and no agent waits for one.
const runWriteBuffer = 1024

// stateWrite is one change to an agent's last run, or (done set) a
// marker closed once everything queued before it is written.
type stateWrite struct {
	f    func(*state.State)
	done chan struct{}
}

// writeRuns applies queued changes to the state until the controller
// shuts down, then flushes what is left. Whatever is queued when a write
// begins goes into that one write.
func (c *Controller) writeRuns() {
	defer close(c.runsDone)
	for {
		var batch []stateWrite
		select {
		case w := <-c.runs:
			batch = append(batch, w)
		case <-c.quit:
			// Flush whatever the actors queued before they ended.
			for {
				select {
				case w := <-c.runs:
					batch = append(batch, w)
				default:
					c.applyRuns(batch)
					return
				}
			}
		}
	drain:
		for {
			select {
			case w := <-c.runs:
				batch = append(batch, w)
			default:
				break drain
			}
		}
		c.applyRuns(batch)
	}
}

func (c *Controller) applyRuns(batch []stateWrite) {
	if !slices.ContainsFunc(batch, func(w stateWrite) bool { return w.f != nil }) {
		for _, w := range batch {
			close(w.done)
		}
		return
	}
	// A failure is the state file's, and Err reports it to status and
	// the API; the records are dropped, as the rows in memory still show
	// them and the file takes nothing until it is fixed.
	err := c.store.Update(func(s *state.State) {
		if s.Agents == nil {
			s.Agents = map[string]state.Agent{}
		}
		for _, w := range batch {
			if w.f != nil {
				w.f(s)
			}
		}
	})
	for _, w := range batch {
		if w.done != nil {
			close(w.done)
		}
	}
	if err == nil {
		// The state directory takes writes again: so may the intent
		// that could not be saved.
		c.retryIntentsNow()
	}
}

// recordRun queues a change to an agent's last run.
func (c *Controller) recordRun(f func(*state.State)) {
	select {
	case c.runs <- stateWrite{f: f}:
	case <-c.quit:
	}
}
