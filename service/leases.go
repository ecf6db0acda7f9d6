package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tether-dev/tether/guardian"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/lease"
)

// leaseTimeout bounds one exchange with etcd on an agent's start: an
// actor waits for it, and commands queue meanwhile.
const leaseTimeout = 5 * time.Second

// leases holds the profile's identities in etcd (I10), for a config with
// a lease section; a controller without one has none, and no etcd code
// runs. It opens the etcd session at the first start that needs it (or
// resumes the one an upgrade handed over), opens another when that one is
// lost, and passes each renewal's deadline to the guardians of the
// identities it holds.
type leases struct {
	cfg     *config.Lease
	profile string
	logf    func(string, ...any)

	mu      sync.Mutex
	s       *lease.Session
	resume  int64 // a lease to take over at the first open (an upgrade's)
	held    map[string]heldLease
	closing bool
}

// heldLease is an agent's identity held under session s, and the
// guardian whose tree must be dead by s's deadline (nil until it runs).
type heldLease struct {
	s        *lease.Session
	identity string
	fence    lease.Fence
	g        *guardian.Session
}

func newLeases(cfg *config.Lease, profile string, resume int64, logf func(string, ...any)) *leases {
	return &leases{cfg: cfg, profile: profile, resume: resume, logf: logf, held: map[string]heldLease{}}
}

// session returns the live session, opening one when there is none.
func (l *leases) session(ctx context.Context) (*lease.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return nil, errors.New("the service is shutting down")
	}
	if l.s != nil && l.s.Err() == nil {
		return l.s, nil
	}
	if l.s != nil {
		// Lost: its connection goes too.
		go closeSession(l.s, l.logf)
		l.s = nil
	}
	var s *lease.Session
	var err error
	if l.resume != 0 {
		id := l.resume
		l.resume = 0
		if s, err = lease.Resume(ctx, l.cfg, l.profile, id); err != nil {
			l.logf("etcd lease %x of the service before could not be resumed: %v; granting another", id, err)
		} else {
			l.logf("resumed etcd lease %x", id)
		}
	}
	if s == nil {
		if s, err = lease.Open(ctx, l.cfg, l.profile); err != nil {
			return nil, err
		}
		l.logf("holding identities in etcd under lease %x (ttl %v, host %s)", s.ID(), l.cfg.TTL, l.cfg.Host)
	}
	l.s = s
	go l.renewals(s)
	return s, nil
}

// acquire holds agent id's identity in etcd: its fencing token and the
// deadline its tree must be dead by, or a *lease.HeldElsewhere.
func (l *leases) acquire(id, identity string) (lease.Fence, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	s, err := l.session(ctx)
	if err != nil {
		return 0, time.Time{}, err
	}
	f, err := s.Acquire(ctx, identity)
	if err != nil {
		return 0, time.Time{}, err
	}
	d := s.Deadline()
	if time.Until(d) < l.cfg.TTL-config.LeaseMargin-l.cfg.RenewEvery() {
		// The renewals are behind (etcd was out of reach, or without a
		// leader, until now): a deadline this close could pass before
		// the guardian starts, or stop the tree as soon as it has.
		if d, err = s.RenewNow(ctx); err != nil {
			return 0, time.Time{}, err
		}
	}
	l.mu.Lock()
	l.held[id] = heldLease{s: s, identity: identity, fence: f}
	l.mu.Unlock()
	return f, d, nil
}

// holding is what an acquire answered.
type holding struct {
	fence    lease.Fence
	deadline time.Time
	err      error
}

// acquireAsync is acquire in the background: its answer comes on the
// channel returned, which must be read.
func (l *leases) acquireAsync(id, identity string) <-chan holding {
	c := make(chan holding, 1)
	go func() {
		f, d, err := l.acquire(id, identity)
		c <- holding{f, d, err}
	}()
	return c
}

// run says that g is the guardian of agent id's tree, held by acquire:
// it gets every renewal's deadline from now on. When the lease was lost
// meanwhile, the guardian stops the tree by the deadline it has.
func (l *leases) run(id string, g *guardian.Session) {
	l.mu.Lock()
	h, ok := l.held[id]
	if ok {
		h.g = g
		l.held[id] = h
	}
	l.mu.Unlock()
	if ok && h.s.Err() == nil {
		// A renewal between the acquire and now is not missed.
		_ = g.Renew(h.s.Deadline())
	}
}

// release lets agent id's identity go in etcd, once its tree is dead.
func (l *leases) release(id string) {
	l.mu.Lock()
	h, ok := l.held[id]
	delete(l.held, id)
	l.mu.Unlock()
	if !ok || h.s.Err() != nil {
		return // gone with its lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if err := h.s.Release(ctx, h.identity, h.fence); err != nil {
		// The key goes with the lease, at the latest when the service
		// ends; meanwhile another host waits.
		l.logf("%v", err)
	}
}

// released returns a channel closed when the holder told of by held lets
// go, or when the session it was seen under is lost (a start then tries
// again under a new one); ctx ends the watch.
func (l *leases) released(ctx context.Context, held *lease.HeldElsewhere) <-chan struct{} {
	l.mu.Lock()
	s := l.s
	l.mu.Unlock()
	out := make(chan struct{})
	if s == nil {
		close(out)
		return out
	}
	r := s.Released(ctx, held)
	go func() {
		select {
		case <-r:
		case <-s.Lost():
		case <-ctx.Done():
			return
		}
		close(out)
	}()
	return out
}

// renewNow renews the lease out of turn and passes the new deadline to
// every guardian of an identity held under it, before it returns: an
// upgrade does it before the handover, so that its guardians' deadlines
// are as far off as they can be while the successor starts, resumes the
// lease and renews it in turn (D210). A failure is only logged: the
// deadlines the guardians have stand.
func (l *leases) renewNow(ctx context.Context) {
	l.mu.Lock()
	s := l.s
	l.mu.Unlock()
	if s == nil || s.Err() != nil {
		return
	}
	d, err := s.RenewNow(ctx)
	if err != nil {
		l.logf("%v; the guardians keep the deadlines they have", err)
		return
	}
	l.pass(s, d)
}

// renewals passes each renewal of s to the guardians of the identities
// held under it, until s ends.
func (l *leases) renewals(s *lease.Session) {
	for {
		select {
		case <-s.Lost():
			if errors.Is(s.Err(), lease.ErrLost) {
				l.logf("etcd lease %x lost: the trees of its identities are stopped by their deadline", s.ID())
			}
			return
		case <-s.Renewed():
		}
		l.pass(s, s.Deadline())
	}
}

// pass sends the deadline d of session s to the guardians of the
// identities held under it.
func (l *leases) pass(s *lease.Session, d time.Time) {
	l.mu.Lock()
	var gs []*guardian.Session
	for _, h := range l.held {
		if h.s == s && h.g != nil {
			gs = append(gs, h.g)
		}
	}
	l.mu.Unlock()
	for _, g := range gs {
		if err := g.Renew(d); err != nil {
			l.logf("passing the lease's deadline to guardian pid %d: %v", g.GuardianPID(), err)
		}
	}
}

// handover is the lease an upgrade's successor is to resume, zero for
// none. This process renews it until it is replaced (the exec on Unix,
// the exit on Windows); a renewal by both for a moment is harmless.
func (l *leases) handover() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s == nil || l.s.Err() != nil {
		return l.resume
	}
	return l.s.ID()
}

// close revokes the lease: every identity it held is free at once. It
// runs once every tree is stopped.
func (l *leases) close() {
	l.mu.Lock()
	s := l.s
	l.closing = true
	l.mu.Unlock()
	if s != nil {
		closeSession(s, l.logf)
	}
}

// closeSession revokes s's lease, if it is still there, and closes its
// connection.
func closeSession(s *lease.Session, logf func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), leaseTimeout)
	defer cancel()
	if err := s.Close(ctx); err != nil && !errors.Is(s.Err(), lease.ErrLost) {
		logf("revoking etcd lease %x: %v", s.ID(), err)
	}
}

// heldText is how a row names the holder of an identity held elsewhere.
func heldText(h *lease.HeldElsewhere) string {
	return fmt.Sprintf("held by %s (profile %s) since %s", h.Holder.Host, h.Holder.Profile, h.Holder.Since.Local().Format("15:04"))
}
