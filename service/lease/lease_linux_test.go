package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/config"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// ttl is the tests' lease ttl, the shortest a config may use with a 1s
// stop_timeout.
const ttl = 4 * time.Second

// host is one machine of a test: a session of its own through its own
// proxy to the cluster.
type host struct {
	name  string
	proxy *etcdtest.Proxy
	s     *Session
}

func newHost(t *testing.T, c *etcdtest.Cluster, name string) *host {
	t.Helper()
	p := c.Proxy()
	cfg := &config.Lease{Endpoints: p.Endpoints(), TTL: ttl, Host: name, Prefix: "/" + t.Name()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg, "default")
	if err != nil {
		t.Fatalf("host %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return &host{name, p, s}
}

func (h *host) acquire(identity string) (Fence, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return h.s.Acquire(ctx, identity)
}

// heldByFirst has a hold identity, and b find it held by a: a's token and
// what b was told.
func heldByFirst(t *testing.T, a, b *host, identity string) (Fence, *HeldElsewhere) {
	t.Helper()
	fa, err := a.acquire(identity)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.acquire(identity)
	var held *HeldElsewhere
	if !errors.As(err, &held) {
		t.Fatalf("b: %v, want held elsewhere", err)
	}
	return fa, held
}

// Two hosts take the same identity at once: exactly one holds it, and the
// other is told who.
func TestAcquireOnce(t *testing.T) {
	c := etcdtest.Start(t, 3)
	hosts := []*host{newHost(t, c, "laptop"), newHost(t, c, "vps")}
	var (
		wg     sync.WaitGroup
		fences [2]Fence
		errs   [2]error
	)
	for i, h := range hosts {
		wg.Go(func() { fences[i], errs[i] = h.acquire("alice@relay") })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("both or neither held the identity: %v, %v", errs[0], errs[1])
	}
	won, lost := 0, 1
	if errs[0] != nil {
		won, lost = 1, 0
	}
	var held *HeldElsewhere
	if !errors.As(errs[lost], &held) {
		t.Fatalf("the loser's error %v (%T) is no *HeldElsewhere", errs[lost], errs[lost])
	}
	if held.Holder.Host != hosts[won].name || held.Holder.Profile != "default" || held.Holder.PID != os.Getpid() || held.Holder.Since.IsZero() {
		t.Errorf("the holder is %+v, want %s, profile default, this pid", held.Holder, hosts[won].name)
	}
	if fences[won] <= 0 {
		t.Errorf("fence %v, want a positive revision", fences[won])
	}
	// The holder holds it again with the same token.
	if f, err := hosts[won].acquire("alice@relay"); err != nil || f != fences[won] {
		t.Errorf("acquiring again: %v, %v; want %v", f, err, fences[won])
	}
	// Another identity is free.
	if _, err := hosts[lost].acquire("bob@relay"); err != nil {
		t.Errorf("another identity: %v", err)
	}
}

// A release wakes the host that waits, which then holds the identity
// with a higher token.
func TestReleaseWakesWatcher(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	fa, held := heldByFirst(t, a, b, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	released := b.s.Released(ctx, held)
	// Nothing wakes it while a holds it, not a's holding it again.
	if _, err := a.acquire("alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
		t.Fatal("woken while a still holds the identity")
	case <-time.After(500 * time.Millisecond):
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	if err := a.s.Release(rctx, "alice", fa); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not wake the watcher")
	}
	fb, err := b.acquire("alice")
	if err != nil || fb <= fa {
		t.Errorf("b after the release: %v, %v; want a token above %v", fb, err, fa)
	}
	// A release with a stale token lets nothing go.
	if err := a.s.Release(rctx, "alice", fa); err != nil {
		t.Fatal(err)
	}
	if _, err := a.acquire("alice"); !errors.As(err, &held) || held.Holder.Host != "vps" {
		t.Errorf("a after its stale release: %v, want held by vps", err)
	}
}

// A holder cut off from etcd: its deadline passes before its lease can
// expire, so the other host can take the identity only after it, with a
// higher token; once healed, the holder learns its lease is gone.
func TestPartition(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	fa, err := a.acquire("alice")
	if err != nil {
		t.Fatal(err)
	}
	a.proxy.Cut()
	cut := time.Now()
	var (
		fb    Fence
		taken time.Time
		last  error
	)
	if !testproc.UntilEvery(ttl+10*time.Second, 100*time.Millisecond, func() bool {
		fb, last = b.acquire("alice")
		taken = time.Now()
		return last == nil
	}) {
		t.Fatalf("b never took the identity: %v", last)
	}
	da := a.s.Deadline()
	if !da.Before(taken) {
		t.Errorf("b took the identity %v after the cut, before a's deadline (%v after the cut)", taken.Sub(cut), da.Sub(cut))
	}
	if da.After(cut.Add(ttl)) {
		t.Errorf("a's deadline is %v after the cut, more than the ttl", da.Sub(cut))
	}
	if fb <= fa {
		t.Errorf("b's token %v is not above a's %v", fb, fa)
	}
	t.Logf("deadline %v after the cut, taken over %v after it", da.Sub(cut), taken.Sub(cut))
	a.proxy.Restore()
	select {
	case <-a.s.Lost():
		if !errors.Is(a.s.Err(), ErrLost) {
			t.Errorf("a's session ended with %v, want ErrLost", a.s.Err())
		}
	case <-time.After(2 * ttl):
		t.Fatal("a, healed, never learned its lease is gone")
	}
}

// The leader's death costs the holder neither its lease nor its
// identity: renewals go on through another member.
func TestLeaderKill(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	if _, err := a.acquire("alice"); err != nil {
		t.Fatal(err)
	}
	c.Leader().Kill()
	killed := time.Now()
	// Two renewals confirmed after the kill.
	testproc.Eventually(t, 3*ttl, func() bool {
		return a.s.Deadline().After(killed.Add(ttl - config.LeaseMargin + a.s.cfg.RenewEvery()))
	}, "a's renewals stopped with the leader: deadline %v after the kill", a.s.Deadline().Sub(killed))
	if err := a.s.Err(); err != nil {
		t.Fatalf("a's session ended: %v", err)
	}
	var held *HeldElsewhere
	if _, err := b.acquire("alice"); !errors.As(err, &held) || held.Holder.Host != "laptop" {
		t.Errorf("b after the leader's death: %v, want held by laptop", err)
	}
	if !time.Now().Before(a.s.Deadline()) {
		t.Error("a's deadline passed while etcd had a leader")
	}
}

// Without quorum nothing renews, so the holder's deadline passes; with
// quorum back, no other host held the identity before that deadline.
func TestQuorumLoss(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	if _, err := a.acquire("alice"); err != nil {
		t.Fatal(err)
	}
	var stopped []*etcdtest.Member
	for _, m := range c.Members[:2] {
		m.Kill()
		stopped = append(stopped, m)
	}
	lostAt := time.Now()
	// The lone member, if it led, confirms renewals until it sees it has
	// lost quorum and steps down, within an election timeout.
	if !testproc.Until(ttl+2*etcdtest.Election, func() bool { return time.Now().After(a.s.Deadline()) }) {
		t.Fatalf("a's deadline did not pass without quorum: %v after the loss", a.s.Deadline().Sub(lostAt))
	}
	for _, m := range stopped {
		m.Restart()
	}
	// Either a renews again (etcd extends leases on a new leader) or its
	// lease is gone and b may take the identity; b never holds it while
	// a's deadline is ahead.
	if !testproc.UntilEvery(3*ttl, 100*time.Millisecond, func() bool {
		_, err := b.acquire("alice")
		if err == nil && time.Now().Before(a.s.Deadline()) {
			t.Fatalf("b holds the identity while a's deadline is %v ahead", time.Until(a.s.Deadline()))
		}
		return err == nil || a.s.Deadline().After(time.Now().Add(ttl/2))
	}) {
		t.Errorf("with quorum back, a neither renews nor lets b take the identity (a: %v)", a.s.Err())
	}
}

// A watch that breaks while the holder lets go still wakes the host that
// waits, once it reaches etcd again: it watches again from where it was.
func TestReleasedAcrossBrokenWatch(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	fa, held := heldByFirst(t, a, b, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	released := b.s.Released(ctx, held)
	// The watch is open once etcd has a watcher on the key; cut it.
	testproc.Eventually(t, 10*time.Second, func() bool { return b.proxy.Accepted() >= 2 }, "b's watch never connected")
	b.proxy.Cut()
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	if err := a.s.Release(rctx, "alice", fa); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
		t.Fatal("woken while cut off from etcd")
	case <-time.After(500 * time.Millisecond):
	}
	b.proxy.Restore()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the release during the cut never woke the watcher")
	}
}

// A host that waits from a revision etcd has compacted away reads the key
// instead: still held, it waits on; let go, it wakes.
func TestReleasedFromCompactedRevision(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := newHost(t, c, "laptop"), newHost(t, c, "vps")
	fa, held := heldByFirst(t, a, b, "alice")
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rev int64
	for range 3 {
		r, err := cli.Put(ctx, gateway.PutRequest{Key: []byte("/" + t.Name() + "/other"), Value: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	compact(t, c.Endpoints()[0], rev)
	released := b.s.Released(ctx, held)
	select {
	case <-released:
		t.Fatal("woken while a still holds the identity")
	case <-time.After(time.Second):
	}
	if err := a.s.Release(ctx, "alice", fa); err != nil {
		t.Fatal(err)
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the release did not wake the watcher")
	}
}

// compact compacts etcd's history up to rev.
func compact(t *testing.T, endpoint string, rev int64) {
	t.Helper()
	body := fmt.Sprintf(`{"revision":"%d","physical":true}`, rev)
	r, err := http.Post(endpoint+"/v3/kv/compaction", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(r.Body)
		t.Fatalf("compacting to %d: %s: %s", rev, r.Status, b)
	}
}

// Over TLS, a session presents the config's certificate and trusts its
// CA; without the certificate etcd refuses it, and without the CA it
// does not trust etcd.
func TestTLS(t *testing.T) {
	c := etcdtest.StartTLS(t, 1)
	open := func(tls config.LeaseTLS) (*Session, error) {
		cfg := &config.Lease{Endpoints: c.Endpoints(), TTL: ttl, Host: "laptop", Prefix: "/" + t.Name(), TLS: &tls}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return Open(ctx, cfg, "default")
	}
	s, err := open(config.LeaseTLS{CA: c.TLS.CA, Cert: c.TLS.Cert, Key: c.TLS.Key})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f, err := s.Acquire(ctx, "alice"); err != nil || f <= 0 {
		t.Errorf("acquiring over TLS: %v, %v", f, err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("closing over TLS: %v", err)
	}
	if s, err := open(config.LeaseTLS{CA: c.TLS.CA}); err == nil {
		_ = s.Close(ctx)
		t.Error("a session without a client certificate was let in")
	}
	if s, err := open(config.LeaseTLS{Cert: c.TLS.Cert, Key: c.TLS.Key}); err == nil {
		_ = s.Close(ctx)
		t.Error("a session trusted etcd's certificate without its CA")
	}
}
