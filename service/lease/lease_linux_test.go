package lease

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/config"
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
	fa, err := a.acquire("alice")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.acquire("alice")
	var held *HeldElsewhere
	if !errors.As(err, &held) {
		t.Fatalf("b: %v, want held elsewhere", err)
	}
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
