//go:build unix || windows

package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/state"
)

// Run runs the service of one profile in the foreground until it is
// told to quit (a stop signal, see stopSignals, or the API), and returns
// the exit code. A reload signal (SIGHUP on Unix; Windows has none)
// reloads the config. Started by an upgrade (handoverEnv set), it takes
// over from the service before instead (see upgrade.go); an upgrade asked
// of it over the API replaces it in turn.
func Run(p Paths, exe, version string, stderr io.Writer) int {
	began := time.Now()
	logf := func(format string, args ...any) { logline.Printf(stderr, "service", format, args...) }
	// Taken first: no agent may inherit the manager's socket.
	mgr := platform.TakeServiceManager()
	notify := func(state string) {
		if err := mgr.Notify(state); err != nil {
			logf("%v", err)
		}
	}
	if err := platform.SecureDir(p.StateDir); err != nil {
		logf("state directory: %v", err)
		return 1
	}
	var b *beginning
	var err error
	restoreGC := func() {}
	if path := os.Getenv(handoverEnv); path != "" {
		// Agents must not see it.
		os.Unsetenv(handoverEnv)
		// What is read to take over is garbage at once, and bounded
		// by the record and the config: the collector waits until
		// the API answers and the guardians are taken over.
		gc := debug.SetGCPercent(-1)
		restoreGC = func() { debug.SetGCPercent(gc) }
		b, err = takeOverFrom(p, path, began, logf)
	} else {
		b, err = begin(p, logf)
	}
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer b.lock.Close()
	defer b.store.Close()
	if err := b.store.Err(); err != nil {
		logf("the state file is malformed and left as it is (intent will not be saved until it is fixed): %v", err)
	}
	if b.upgrade == nil {
		// What earlier runs left; a successor's guardians all live on.
		for _, note := range slices.Concat(sweepPrivateDirs(p), sweepCgroups()) {
			logf("%s", note)
		}
	}
	// After a takeover: the guardians handed over are counted as this
	// process's own children first (see takeOverFrom), so the adopter
	// never takes one for an orphan.
	orphans, err := newOrphans()
	if err != nil {
		logf("not a child subreaper (%v): what a dead guardian's tree leaves outside its session goes to init", err)
	} else if orphans != nil {
		defer orphans.Close()
	}
	c := NewController(Options{Paths: p, Executable: exe, Orphans: orphans, Logf: logf, resumed: b.resumed}, b.cfg, b.store)
	c.service = ServiceInfo(exe, version)
	srv := localapi.New(c, b.listener)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	if b.upgrade != nil {
		up := *b.upgrade
		up.Took = time.Since(up.Began)
		for _, st := range stepList() {
			if st.Step == "paused" {
				up.Paused = st.At
			}
		}
		c.setUpgrade(up)
		stopAt("serving")
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
			b.inherit.served()
			restoreGC()
			logf("profile %q taken over on %s (upgrade %s in %v: %s) with %d agent(s) from %s", p.Profile, p.Socket, up.ID, up.Took.Round(time.Microsecond), formatSteps(stepList()), len(b.cfg.Agents), b.cfg.Path)
		}()
	} else {
		logf("profile %q serving on %s with %d agent(s) from %s", p.Profile, p.Socket, len(b.cfg.Agents), b.cfg.Path)
	}
	// The socket listens: a Type=notify unit's start returns now.
	notify("READY=1\nSTATUS=serving profile " + p.Profile)
	u := &upgrader{p: p, exe: exe, version: version, c: c, srv: srv, inherit: b.inherit, logf: logf, notify: notify, env: mgr.Env()}

	stopping := c.Stopping()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, slices.Concat(stopSignals, reloadSignals)...)
	defer signal.Stop(sigs)
	for {
		select {
		case s := <-sigs:
			if slices.Contains(reloadSignals, s) {
				b.listener.check()
				notify(platform.Reloading())
				if err := c.Reload(context.Background()); err != nil {
					logf("reload: %v", err)
				} else {
					logf("reloaded %s", p.Config)
				}
				notify("READY=1")
				continue
			}
			logf("received %v: stopping every agent", s)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if err := c.Shutdown(ctx, false); err != nil {
					logf("%v (send the signal again to exit anyway)", err)
				}
			}()
		case call := <-c.upgradeCalls():
			u.upgrade(call)
		case <-stopping:
			stopping = nil
			notify("STOPPING=1")
		case <-c.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
			logf("stopped")
			return 0
		case err := <-served:
			logf("local API stopped: %v", err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			_ = c.Shutdown(ctx, true)
			cancel()
			return 1
		}
	}
}

// beginning is what the service runs with: its lock, config, state and
// listener, and, for an upgrade's successor, what it takes over.
type beginning struct {
	lock     *os.File
	cfg      *config.Config
	store    *state.Store
	listener *apiListener
	inherit  *inheritance
	resumed  map[string]resumedAgent
	tethers  map[string]*tetherHandover // by agent id, to attach once serving
	upgrade  *api.Upgrade
}

// begin starts a service afresh.
func begin(p Paths, logf func(string, ...any)) (b *beginning, err error) {
	b = &beginning{}
	if b.lock, err = takeServiceLock(p); err != nil {
		return nil, err
	}
	lock := b.lock
	defer func() {
		if err != nil {
			lock.Close() // b is nil by now
		}
	}()
	// A record left by a handover that did not happen (the service was
	// killed in the middle of it) names descriptors of a dead process.
	removeStaleHandover(p.StateDir)
	if b.cfg, err = loadConfig(p); err != nil {
		return nil, err
	}
	if b.store, err = state.Open(p.StateDir); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if b.listener, err = listenAPI(p.Socket, logf); err != nil {
		b.store.Close()
		return nil, fmt.Errorf("local API: %w", err)
	}
	b.inherit = newInheritance(b.lock, b.listener)
	return b, nil
}

// takeOverFrom is begin for an upgrade's successor: everything comes from
// the handover record at path. A failure here is a crash like any other:
// the tethers close with this process, and the guardians tear down (I2).
func takeOverFrom(p Paths, path string, began time.Time, logf func(string, ...any)) (*beginning, error) {
	if err := awaitHandover(); err != nil {
		return nil, err
	}
	// The state beside the record and the config: all three are only
	// read, and the state needs neither.
	openStore := background(func() (*state.Store, error) { return state.Open(p.StateDir) })
	// closeStore is for the failures: they return once it is open.
	closeStore := func() {
		if store, err := openStore(); err == nil {
			store.Close()
		}
	}
	rec, agents, err := readHandover(path, p.Profile)
	if err != nil {
		closeStore()
		return nil, err
	}
	// The config beside the agents' decode.
	parseConfig := background(rec.config)
	fail := func(err error) (*beginning, error) {
		_, _ = parseConfig()
		closeStore()
		return nil, err
	}
	if err := rec.decodeAgents(agents); err != nil {
		return fail(err)
	}
	beginSteps(rec.Upgrade.Began, append(rec.Steps,
		handoverStep{Step: "running", At: began.Sub(rec.Upgrade.Began)},
		handoverStep{Step: "read", At: time.Since(rec.Upgrade.Began)}))
	in, err := inherited(rec, p)
	if err != nil {
		return fail(err)
	}
	stopAt("successor")
	reapLater(rec.Reap, true)
	b := &beginning{lock: in.lock, listener: keepAPI(p.Socket, in.listener, logf), inherit: in, upgrade: &rec.Upgrade, resumed: map[string]resumedAgent{}}
	in.listener = b.listener // what a later upgrade hands over: the socket then
	if b.cfg, err = parseConfig(); err != nil {
		return fail(err)
	}
	if b.store, err = openStore(); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	stopAt("config and state")
	// The point of no return: from here this process reads the tethers.
	if err := in.prepared(); err != nil {
		b.store.Close()
		return nil, err
	}
	b.tethers = map[string]*tetherHandover{}
	for _, st := range rec.Agents {
		r := resumedAgent{state: st}
		if t := st.Tether; t != nil {
			r.session = make(chan attachResult, 1)
			b.tethers[st.ID] = t
			// Before the adoption of orphans begins.
			claimGuardian(t)
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
		at, err := attachment(a.ID, t)
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
			stopAt("attaching")
		}
	}
	stopAt("attached")
	if !attachLater {
		for _, s := range sessions {
			s.SendAttach()
		}
		b.inherit.tookOver(sessions, logf)
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
				stopAt("announcing")
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

// ErrAlreadyRunning: another service runs this profile.
var ErrAlreadyRunning = errors.New("the service of this profile is already running")

// takeServiceLock makes this the only service of the profile: a lock on
// service.lock in the state directory, which holds the pid of its holder
// at platform.LockDataOffset, for the message a second one prints.
func takeServiceLock(p Paths) (*os.File, error) {
	f, err := platform.OpenLockFile(filepath.Join(p.StateDir, "service.lock"))
	if err != nil {
		return nil, err
	}
	if err := platform.TryLock(f); err != nil {
		b, _ := io.ReadAll(io.NewSectionReader(f, platform.LockDataOffset, 64))
		f.Close()
		if errors.Is(err, platform.ErrLocked) {
			pid := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: profile %q runs as pid %s", ErrAlreadyRunning, p.Profile, pid)
		}
		return nil, err
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), platform.LockDataOffset)
	return f, nil
}
