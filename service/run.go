//go:build unix || windows

package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tether-dev/tether/internal/human"
	"github.com/tether-dev/tether/internal/logline"
	"github.com/tether-dev/tether/platform"
	"github.com/tether-dev/tether/power"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/localapi"
	"github.com/tether-dev/tether/service/state"
	"github.com/tether-dev/tether/service/upgrade"
)

// Run runs the service of one profile in the foreground until it is
// told to quit (a stop signal, see stopSignals, or the API), and returns
// the exit code. A reload signal (SIGHUP on Unix; Windows has none)
// reloads the config. Started by an upgrade (upgrade.Env set), it takes
// over from the service before (run_takeover.go); otherwise it starts
// afresh. An upgrade asked of it over the API replaces it in turn.
func Run(p Paths, exe, version string, stderr io.Writer) int {
	began, beganCPU := time.Now(), upgrade.ProcessCPU()
	r := &runner{p: p, exe: exe, version: version}
	r.logf = func(format string, args ...any) { logline.Printf(stderr, "service", format, args...) }
	// Taken first: no agent may inherit the manager's socket.
	r.mgr = platform.TakeServiceManager()
	if err := platform.SecureDir(p.StateDir); err != nil {
		r.logf("state directory: %v", err)
		return 1
	}
	if path := os.Getenv(upgrade.Env); path != "" {
		return r.takeOver(path, began, beganCPU)
	}
	return r.fresh()
}

// runner is a service's run: Run's arguments and what it made first.
type runner struct {
	p            Paths
	exe, version string
	logf         func(string, ...any)
	mgr          platform.ServiceManager
}

// notify tells the service manager, if any, of state.
func (r *runner) notify(state string) {
	if err := r.mgr.Notify(state); err != nil {
		r.logf("%v", err)
	}
}

// fresh runs a service that starts afresh.
func (r *runner) fresh() int {
	b, err := begin(r.p, r.logf)
	if err != nil {
		r.logf("%v", err)
		return 1
	}
	defer b.close()
	b.reportStore(r.logf)
	// What earlier runs left; a successor's guardians all live on.
	for _, note := range slices.Concat(sweepPrivateDirs(r.p), sweepCgroups()) {
		r.logf("%s", note)
	}
	return r.serve(b, func(*Controller, *localapi.Server) {
		r.logf("profile %q serving on %s with %s from %s", r.p.Profile, r.p.Socket, human.Count(len(b.cfg.Agents), "agent", "agents"), b.cfg.Path)
	})
}

// serve runs the service b begins with until it stops: its controller,
// its API (started is called once it serves), its signals and its
// upgrades.
func (r *runner) serve(b *beginning, started func(*Controller, *localapi.Server)) int {
	p, logf, notify := r.p, r.logf, r.notify
	// After a takeover: the guardians handed over are counted as this
	// process's own children first (see takeOverFrom), so the adopter
	// never takes one for an orphan.
	orphans, err := newOrphans()
	if err != nil {
		logf("not a child subreaper (%v): what a dead guardian's tree leaves outside its session goes to init", err)
	} else if orphans != nil {
		defer orphans.Close()
	}
	c := NewController(Options{Paths: p, Executable: r.exe, Orphans: orphans, Logf: logf, resumed: b.resumed, leaseID: b.leaseID}, b.cfg, b.store)
	var srv *localapi.Server
	var served chan error
	if e := b.early; e != nil {
		// It answers already, as the service it described then: from
		// now on through the controller.
		c.service = *e.api.status.Service
		srv, served = e.srv, e.served
		e.api.run(c)
		upgrade.StopAt(upgrade.StepRunsAll)
	} else {
		c.service = ServiceInfo(r.exe, r.version)
		srv, served = localapi.New(c, b.listener), make(chan error, 1)
		go func() { served <- srv.Serve() }()
	}
	started(c, srv)
	// The socket listens: a Type=notify unit's start returns now.
	notify("READY=1\nSTATUS=serving profile " + p.Profile)
	u := &upgrade.Upgrader{Profile: p.Profile, StateDir: p.StateDir, Exe: r.exe, Version: r.version, Args: globalArgs(p),
		Control: upgradeControl{c}, Server: srv, Inherit: b.inherit,
		Listener: func() net.Listener { return currentListener(b.listener) },
		Held:     b.listener.hold,
		Logf:     logf, Notify: notify, Env: r.mgr.Env()}

	// After a resume every agent is looked at at once (Slept).
	sleeps := make(chan bool, 1)
	sleepCtx, endSleep := context.WithCancel(context.Background())
	defer endSleep()
	go power.WatchSleep(sleepCtx, sleeps)

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
				_, _ = c.Reload(context.Background()) // it logs what it did
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
		case suspending := <-sleeps:
			c.Slept(suspending)
		case call := <-c.upgradeCalls():
			u.Upgrade(call.req, call.answer)
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
	inherit  upgrade.Inheritance
	resumed  map[string]resumedAgent
	leaseID  int64                      // the etcd lease of the service before, for an upgrade's successor
	tethers  map[string]*upgrade.Tether // by agent id, to attach once serving
	// early, in an upgrade's successor, is its API, which answers
	// before the controller runs.
	early *answering
}

// close closes the state and lets go of the service lock.
func (b *beginning) close() {
	b.store.Close()
	b.lock.Close()
}

// reportStore says so when the state file is malformed.
func (b *beginning) reportStore(logf func(string, ...any)) {
	if err := b.store.Err(); err != nil {
		logf("the state file is malformed and left as it is (intent will not be saved until it is fixed): %v", err)
	}
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
	upgrade.RemoveStale(p.StateDir)
	if b.cfg, err = loadConfig(p); err != nil {
		return nil, err
	}
	if b.store, err = state.Open(p.StateDir, platform.OpenAppendNoFollow); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if b.listener, err = listenAPI(p.Socket, logf); err != nil {
		b.store.Close()
		return nil, fmt.Errorf("local API: %w", err)
	}
	b.inherit = upgrade.New(b.lock)
	return b, nil
}

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
