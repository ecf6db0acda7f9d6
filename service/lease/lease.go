// Package lease holds agents' identities in etcd, so that one identity
// runs on one machine at a time (I10). A Session is one etcd lease of a
// profile, renewed while it lives; each identity it holds is a key,
// <prefix>/identities/<identity>, bound to that lease, put only if absent.
// When the session can no longer renew, its keys go when etcd's lease
// expires, and another host may take them; before then, the service must
// have stopped every tree of those identities: Deadline is when.
//
// Only the service imports it: the guardian knows nothing of etcd, only
// the deadline by which its tree must be dead. Without a lease section in
// the config, nothing here runs and nothing connects anywhere: Open is the
// only way in, and it refuses a nil config.
package lease

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// ErrNotConfigured is what Open returns without a lease section.
var ErrNotConfigured = errors.New("no lease section in the config: identities are held on this machine only")

// ErrLost is the cause of a session whose etcd lease is gone: it expired
// or was revoked, and every identity it held with it.
var ErrLost = errors.New("the etcd lease is gone, and the identities it held")

// Holder is who holds an identity: the value of its key, in JSON.
type Holder struct {
	Host    string    `json:"host"`
	Profile string    `json:"profile"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
}

// HeldElsewhere is Acquire's error when another session holds the
// identity: another host, or another profile. Find it with errors.As.
type HeldElsewhere struct {
	Identity string
	Holder   Holder
	// Revision is etcd's revision when it was seen held: Released
	// watches from the next one, so that no release is missed.
	Revision int64
}

func (e *HeldElsewhere) Error() string {
	return fmt.Sprintf("identity %q is held by %s (profile %s) since %s", e.Identity, e.Holder.Host, e.Holder.Profile, e.Holder.Since.Local().Format("15:04"))
}

// Fence is an identity's fencing token: the create revision of its key,
// which grows with every new holder. A server that remembers the highest
// it saw can refuse a stale holder. The agent gets it as TETHER_FENCE.
type Fence int64

// String is the decimal of TETHER_FENCE.
func (f Fence) String() string { return strconv.FormatInt(int64(f), 10) }

// Key is the etcd key of identity under prefix. The identity is
// path-escaped, so that a '/' in it makes no level of its own.
func Key(prefix, identity string) string {
	return prefix + "/identities/" + url.PathEscape(identity)
}

// Session is a profile's etcd lease, renewed until Close or until it is
// lost.
type Session struct {
	cli     *gateway.Client
	cfg     config.Lease
	profile string
	id      int64
	cancel  context.CancelFunc
	stopped chan struct{} // closed when renew returns

	renewed chan struct{} // a renewal etcd confirmed; see Renewed

	mu       sync.Mutex
	deadline time.Time
	err      error         // why the session ended, once it has
	lost     chan struct{} // closed when the lease is gone
}

// rewatchAfter is the pause before a watch that ended is started again.
const rewatchAfter = 250 * time.Millisecond

// Open connects to etcd and grants a lease of the configured ttl for
// profile. It fails with ErrNotConfigured when cfg is nil, connecting
// nowhere.
func Open(ctx context.Context, cfg *config.Lease, profile string) (*Session, error) {
	if cfg == nil {
		return nil, ErrNotConfigured
	}
	cli, err := client(cfg)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	g, err := cli.Grant(ctx, int64(cfg.TTL/time.Second))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("granting an etcd lease: %w", err)
	}
	if g.ID == 0 {
		cli.Close()
		return nil, errors.New("granting an etcd lease: etcd answered no lease")
	}
	return start(cli, cfg, profile, g.ID, sent), nil
}

// Resume takes over the lease id that another process of the profile
// held (the service before an upgrade): it renews it at once and from
// then on, and the identities bound to it stay held, with the same
// fencing tokens. It fails with ErrLost when the lease is gone.
func Resume(ctx context.Context, cfg *config.Lease, profile string, id int64) (*Session, error) {
	if cfg == nil {
		return nil, ErrNotConfigured
	}
	cli, err := client(cfg)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	r, err := cli.KeepAliveOnce(ctx, id)
	if err == nil && r.TTL <= 0 || gone(err) {
		err = ErrLost
	}
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("renewing etcd lease %x: %w", id, err)
	}
	return start(cli, cfg, profile, id, sent), nil
}

// start is the session of lease id, last renewed at sent; it renews it
// from now on.
func start(cli *gateway.Client, cfg *config.Lease, profile string, id int64, sent time.Time) *Session {
	rctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		cli: cli, cfg: *cfg, profile: profile, id: id, cancel: cancel,
		stopped: make(chan struct{}), lost: make(chan struct{}), renewed: make(chan struct{}, 1),
		deadline: deadline(sent, cfg.TTL),
	}
	go s.renew(rctx)
	return s
}

// client is a client of cfg's etcd, through the JSON gateway of its
// members. It connects at its first request.
func client(cfg *config.Lease) (*gateway.Client, error) {
	var t *tls.Config
	if cfg.TLS != nil {
		var err error
		if t, err = tlsConfig(cfg.TLS); err != nil {
			return nil, err
		}
	}
	cli, err := gateway.New(cfg.Endpoints, t)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	return cli, nil
}

// gone reports whether err is etcd saying that the lease is not there:
// expired or revoked.
func gone(err error) bool { return gateway.IsCode(err, gateway.CodeNotFound) }

// tlsConfig loads the CA and the client's certificate.
func tlsConfig(t *config.LeaseTLS) (*tls.Config, error) {
	out := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("etcd's CA: %w", err)
		}
		out.RootCAs = x509.NewCertPool()
		if !out.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd's CA: no certificate in %s", t.CA)
		}
	}
	if t.Cert != "" {
		c, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("the certificate for etcd: %w", err)
		}
		out.Certificates = []tls.Certificate{c}
	}
	return out, nil
}

// deadline is when the trees of a session whose last renewal etcd
// confirmed was sent at sent must be dead: etcd counts the ttl from when
// the renewal reached its leader, which is after sent, so the lease
// cannot expire before sent + ttl on etcd's clock. config.LeaseMargin
// less than that allows for this clock running slower than etcd's
// leader's and for the deadline's travel to the guardians. sent carries
// the monotonic clock, and so does the deadline: a step of the wall
// clock moves neither.
func deadline(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - config.LeaseMargin)
}

// renew renews the lease every third of the ttl, and again soon after a
// renewal that failed, until ctx ends or the lease is gone.
func (s *Session) renew(ctx context.Context) {
	defer close(s.stopped)
	every := s.cfg.RenewEvery()
	retry := min(every/4, 250*time.Millisecond)
	next := every
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		sent, err := s.renewOnce(rctx)
		cancel()
		switch {
		case err == nil:
			select {
			case s.renewed <- struct{}{}:
			default: // one already waits: the reader reads Deadline
			}
			next = every - time.Since(sent)
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrLost):
			return
		default:
			next = retry
		}
	}
}

// renewOnce renews the lease once and moves the deadline on; it returns
// when the renewal was sent. A lease found gone ends the session with
// ErrLost.
func (s *Session) renewOnce(ctx context.Context) (sent time.Time, err error) {
	sent = time.Now()
	r, err := s.cli.KeepAliveOnce(ctx, s.id)
	switch {
	case err == nil && r.TTL > 0:
		s.mu.Lock()
		s.deadline = deadline(sent, s.cfg.TTL)
		s.mu.Unlock()
		return sent, nil
	case err == nil || gone(err):
		s.end(ErrLost)
		return sent, ErrLost
	}
	return sent, err
}

// RenewNow renews the lease at once, out of turn, and returns the new
// Deadline: before an upgrade, so that the successor has all of it.
func (s *Session) RenewNow(ctx context.Context) (time.Time, error) {
	if err := s.Err(); err != nil {
		return time.Time{}, err
	}
	if _, err := s.renewOnce(ctx); err != nil {
		return time.Time{}, fmt.Errorf("renewing etcd lease %x: %w", s.id, err)
	}
	return s.Deadline(), nil
}

// end ends the session with err, once.
func (s *Session) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
		close(s.lost)
	}
}

// ID is the etcd lease's id.
func (s *Session) ID() int64 { return s.id }

// Deadline is when every tree of the identities the session holds must
// be dead, unless a renewal comes before: the local monotonic time at
// which the last renewal that etcd confirmed was sent, plus the ttl,
// less config.LeaseMargin. A guardian stops its tree at the deadline
// less its stop_timeout and config.KillMargin.
func (s *Session) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// Renewed receives after each renewal that etcd confirmed; several in a
// row while nobody reads are one. Read Deadline then.
func (s *Session) Renewed() <-chan struct{} { return s.renewed }

// Lost is closed when the session has ended: its lease is gone (Err is
// ErrLost) or it was closed.
func (s *Session) Lost() <-chan struct{} { return s.lost }

// Err is why the session ended, or nil while it lives.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Acquire holds identity under the session's lease, if no one holds it:
// it returns the identity's fencing token, or a *HeldElsewhere naming the
// holder. An identity this session holds already is held again, with the
// same token.
func (s *Session) Acquire(ctx context.Context, identity string) (Fence, error) {
	if err := s.Err(); err != nil {
		return 0, err
	}
	key := []byte(Key(s.cfg.Prefix, identity))
	val, err := json.Marshal(Holder{Host: s.cfg.Host, Profile: s.profile, PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return 0, err
	}
	r, err := s.cli.Txn(ctx, gateway.TxnRequest{
		Compare: []gateway.Compare{gateway.CreateRevisionIs(key, 0)},
		Success: []gateway.RequestOp{{Put: &gateway.PutRequest{Key: key, Value: val, Lease: s.id}}},
		Failure: []gateway.RequestOp{{Range: &gateway.RangeRequest{Key: key}}},
	})
	if gone(err) {
		// The put named a lease etcd no longer has: the session is
		// over, whether or not a renewal has seen it yet.
		s.end(ErrLost)
		err = ErrLost
	}
	if err != nil {
		return 0, fmt.Errorf("holding identity %q in etcd: %w", identity, err)
	}
	if r.Succeeded {
		return Fence(r.Header.Revision), nil
	}
	var kvs []gateway.KeyValue
	if len(r.Responses) > 0 && r.Responses[0].Range != nil {
		kvs = r.Responses[0].Range.Kvs
	}
	if len(kvs) == 0 {
		// Released between the compare and the get: there is none in
		// one transaction, but say so rather than guess.
		return 0, fmt.Errorf("holding identity %q in etcd: no key and no success", identity)
	}
	kv := kvs[0]
	if kv.Lease == s.id {
		return Fence(kv.CreateRevision), nil
	}
	held := &HeldElsewhere{Identity: identity, Revision: r.Header.Revision}
	// A value that does not decode still names the identity as held.
	_ = json.Unmarshal(kv.Value, &held.Holder)
	return 0, held
}

// Release lets identity go, if the session holds it with token fence.
func (s *Session) Release(ctx context.Context, identity string, fence Fence) error {
	key := []byte(Key(s.cfg.Prefix, identity))
	_, err := s.cli.Txn(ctx, gateway.TxnRequest{
		Compare: []gateway.Compare{gateway.CreateRevisionIs(key, int64(fence)), gateway.LeaseIs(key, s.id)},
		Success: []gateway.RequestOp{{DeleteRange: &gateway.DeleteRangeRequest{Key: key}}},
	})
	if err != nil {
		return fmt.Errorf("releasing identity %q in etcd: %w", identity, err)
	}
	return nil
}

// Released returns a channel that is closed when the identity that held
// told of is let go (its key deleted, or expired with its lease), woken
// by an etcd watch from the revision it was seen held at. The channel is
// never closed if ctx ends, or the session, first.
func (s *Session) Released(ctx context.Context, held *HeldElsewhere) <-chan struct{} {
	out := make(chan struct{})
	key := []byte(Key(s.cfg.Prefix, held.Identity))
	go func() {
		// The session's end ends the watch too.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-s.lost:
				cancel()
			case <-ctx.Done():
			}
		}()
		rev := held.Revision + 1
		for ctx.Err() == nil {
			released, next := s.watch(ctx, key, rev)
			if released {
				close(out)
				return
			}
			rev = next
			// The watch ended without a release (no leader, etcd out
			// of reach): watch again, after a pause, while the session
			// lives.
			select {
			case <-ctx.Done():
			case <-time.After(rewatchAfter):
			}
		}
	}()
	return out
}

// watch watches key from rev, until a delete (released) or until the
// watch ends; then next is the revision to watch from again, read from
// etcd when the watch did not end with ctx.
func (s *Session) watch(ctx context.Context, key []byte, rev int64) (released bool, next int64) {
	if w, err := s.cli.Watch(ctx, gateway.WatchRequest{Key: key, StartRevision: rev}); err == nil {
		for {
			r, err := w.Next()
			if err != nil || r.CompactRevision != 0 || r.Canceled {
				break
			}
			for _, ev := range r.Events {
				if ev.Deleted() {
					w.Close()
					return true, 0
				}
			}
			// Only an answer with events has seen every change up to
			// its revision: the creation's answer tells the newest
			// revision before the history from rev is sent.
			if len(r.Events) > 0 && r.Header.Revision > 0 {
				rev = r.Header.Revision + 1
			}
		}
		w.Close()
	}
	if ctx.Err() != nil {
		return false, rev
	}
	// The history may be gone (compacted), or the watch broke: read the
	// key as it is now.
	g, err := s.cli.Range(ctx, gateway.RangeRequest{Key: key})
	if err != nil {
		return false, rev
	}
	if len(g.Kvs) == 0 {
		return true, 0
	}
	return false, g.Header.Revision + 1
}

// Close stops renewing and revokes the lease, which lets every identity
// the session holds go at once.
func (s *Session) Close(ctx context.Context) error {
	s.cancel()
	<-s.stopped
	s.end(errors.New("the lease session was closed"))
	err := s.cli.Revoke(ctx, s.id)
	if gone(err) {
		err = nil // gone already, as revoking would have it
	}
	s.cli.Close()
	return err
}
