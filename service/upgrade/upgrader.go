package upgrade

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/tether-dev/tether/api"
	"github.com/tether-dev/tether/platform"
)

// Bounds of an upgrade's steps.
const (
	pauseTimeout = 10 * time.Second
	// FreezeTimeout bounds the freeze of every actor.
	FreezeTimeout = 30 * time.Second
)

// Controller is what an upgrade asks of the service's controller.
type Controller interface {
	// Offer says what a handover would carry now, for the new binary's
	// check.
	Offer() Offer
	// Freeze stops every actor where nothing is in flight, detaches its
	// session, and says what its successor needs; within ctx, or it
	// fails with every actor going on.
	Freeze(ctx context.Context) (*Frozen, error)
	// SetUpgrade records the last upgrade for Status.
	SetUpgrade(api.Upgrade)
	// Build is the build the service runs (BuildOf).
	Build() string
	// Status is what the API answers a status with now.
	Status() api.Status
}

// Frozen is a controller stopped for a handover.
type Frozen struct {
	Config Config
	Agents []Agent // in the config's order
	Reap   []int   // warm guardians let go, for the successor to reap
	// Lease is the etcd lease that holds the profile's identities, for
	// the successor to renew; zero for none.
	Lease int64
	// Thaw lets every frozen actor go on: the handover failed.
	Thaw func()
}

// Pauser is the local API's server, paused for the handover.
type Pauser interface {
	// Pause stops accepting, ends the event streams (with a handover
	// event when handover is set) and waits for the requests in
	// progress, within ctx.
	Pause(ctx context.Context, handover bool) error
	// Resume serves again after a pause.
	Resume()
}

// Upgrader makes the upgrades of one running service; its run loop
// calls Upgrade, one at a time.
type Upgrader struct {
	Profile  string
	StateDir string
	Exe      string   // the binary the service runs: the target by default
	Version  string   // the version of tether the service runs
	Args     []string // the service's global flags, for the new binary's check
	Control  Controller
	Server   Pauser
	Inherit  Inheritance         // the descriptors that are not the actors'
	Listener func() net.Listener // the API's listening socket now
	// Held takes the connections a stand-in held, when the handover
	// fails: the API serves them first once it serves again.
	Held   func([]net.Conn)
	Logf   func(string, ...any)
	Notify func(string) // tells the service manager, if any
	Env    []string     // added to the successor's environment
}

// Upgrade checks the binary req asks for, answers with answer, and
// hands over: it returns only when the handover failed, having recorded
// why.
func (u *Upgrader) Upgrade(req api.UpgradeRequest, answer func(api.UpgradeAnswer, error)) {
	began := time.Now()
	target := req.Executable
	if target == "" {
		target = u.Exe
	}
	if abs, err := filepath.Abs(target); err == nil {
		target = abs
	}
	up := api.Upgrade{ID: req.ID, From: u.Control.Build(), Executable: target, Began: began.UTC()}
	if up.ID == "" {
		up.ID = newID()
	}
	fail := func(err error) {
		up.Error = &api.Error{Code: api.CodeUpgrade, Message: err.Error()}
		u.Control.SetUpgrade(up)
		u.Logf("upgrade %s to %s: %v; the service goes on as it was", up.ID, target, err)
	}
	Begin(up.ID, began, nil)
	ans, standIn, err := check(target, u.Args, u.Control.Offer())
	if err != nil {
		fail(err)
		answer(api.UpgradeAnswer{}, up.Error)
		return
	}
	up.To = ans.Build
	StopAt(StepChecked)
	u.Control.SetUpgrade(up)
	u.Logf("upgrade %s: from tether %s (build %s) to tether %s (build %s, %s; its guardians: %s): handing over", up.ID, u.Version, up.From, ans.Version, ans.Build, target, ans.Guardian)
	answer(api.UpgradeAnswer{Upgrade: up}, nil)
	if err := u.handOver(target, up, standIn); err != nil {
		fail(err)
	}
}

// handOver pauses, freezes, records and execs, with standIn (if any)
// answering from the pause on; it returns only on failure, with the
// service as it was.
func (u *Upgrader) handOver(target string, up api.Upgrade, standIn *StandIn) (err error) {
	pctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	// A manager shows the service reloading until the successor says it
	// is ready (or this one, when the handover fails).
	u.Notify(platform.Reloading())
	defer func() {
		if err != nil {
			u.Server.Resume()
			u.Notify("READY=1")
		}
	}()
	if err := u.Server.Pause(pctx, true); err != nil {
		standIn.Close()
		return fmt.Errorf("requests in progress did not end within %v: %w", pauseTimeout, err)
	}
	StopAt(StepPaused)
	if standIn != nil {
		if err := standIn.Serve(u.Listener(), u.pausedStatus(up)); err != nil {
			// The successor answers, as without a stand-in.
			u.Logf("upgrade %s: %v; the API is silent until the successor serves", up.ID, err)
			standIn.Close()
			standIn = nil
		} else {
			StopAt(StepStandIn)
		}
	}
	defer func() {
		if err == nil || standIn == nil {
			return
		}
		held, rerr := standIn.Recall()
		if rerr != nil {
			u.Logf("upgrade %s: %v; the requests it held are lost", up.ID, rerr)
		}
		u.Held(held)
		standIn.Close()
	}()
	fctx, fcancel := context.WithTimeout(context.Background(), FreezeTimeout)
	defer fcancel()
	f, err := u.Control.Freeze(fctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Thaw()
		}
	}()
	StopAt(StepFrozen)
	rec := &Record{Version: Version, Written: time.Now().UTC(), PID: os.Getpid(),
		Profile: u.Profile, Upgrade: up, Config: f.Config, Agents: f.Agents, Reap: f.Reap, Lease: f.Lease,
		standIn: standIn}
	return u.Inherit.TakeOver(target, u.Listener(), rec, u.Env, Path(u.StateDir))
}

// pausedStatus is the status a stand-in answers: the API's now, with
// the upgrade under way and paused.
func (u *Upgrader) pausedStatus(up api.Upgrade) api.Status {
	st := u.Control.Status()
	var svc api.Service
	if st.Service != nil {
		svc = *st.Service
	}
	up.Paused = PausedAt()
	svc.Upgrade = &up
	st.Service = &svc
	return st
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// eachTether calls f with each tether of rec and the descriptor of its
// conn in this process, and sets the tether's Conn to what f returns: on
// Unix the descriptor itself (inherited across execve), on Windows its
// duplicate in the successor. rec.Tethers lists them all.
func eachTether(rec *Record, f func(fd uintptr) (uintptr, error)) error {
	for i := range rec.Agents {
		t := rec.Agents[i].Tether
		if t == nil {
			continue
		}
		rc, err := t.Handoff.SyscallConn()
		if err == nil {
			var fd uintptr
			if err = rc.Control(func(d uintptr) { fd = d }); err == nil {
				t.Conn, err = f(fd)
			}
		}
		if err != nil {
			return fmt.Errorf("the tether of %q: %w", rec.Agents[i].ID, err)
		}
		rec.Tethers = append(rec.Tethers, t.Conn)
	}
	return nil
}
