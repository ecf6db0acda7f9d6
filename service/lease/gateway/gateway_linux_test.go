package gateway_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/etcdtest"
	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/lease/gateway"
)

func get(cli *gateway.Client, key string) (*gateway.RangeResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cli.Range(ctx, gateway.RangeRequest{Key: []byte(key)})
}

// brokenPeer is an endpoint that accepts connections and closes them at
// once, counting them.
func brokenPeer(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String(), &n
}

// A member that cannot answer is passed over, and the one that answered
// is asked first from then on; and every request after the first takes
// the connection the first one opened.
func TestFailoverAndKeepAlive(t *testing.T) {
	c := etcdtest.Start(t, 1)
	p := c.Proxy()
	broken, tries := brokenPeer(t)
	cli, err := gateway.New(append([]string{broken}, p.Endpoints()...), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, err := cli.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	// A renewal is a stream of one answer: it too leaves its connection.
	for i := range 10 {
		if _, err := get(cli, "k"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if r, err := cli.KeepAliveOnce(ctx, g.ID); err != nil || r.TTL <= 0 {
			t.Fatalf("renewal %d: %+v, %v", i, r, err)
		}
	}
	if n := tries.Load(); n != 1 {
		t.Errorf("the broken member was tried %d times, want once", n)
	}
	if n := p.Accepted(); n != 1 {
		t.Errorf("21 requests opened %d connections, want 1", n)
	}
	// A lease etcd does not know: a renewal says ttl 0, a revoke
	// CodeNotFound.
	if err := cli.Revoke(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := cli.KeepAliveOnce(ctx, g.ID); err != nil || r.TTL != 0 {
		t.Errorf("renewing a revoked lease: %+v, %v; want ttl 0", r, err)
	}
	if err := cli.Revoke(ctx, g.ID); !gateway.IsCode(err, gateway.CodeNotFound) {
		t.Errorf("revoking a revoked lease: %v, want CodeNotFound", err)
	}
	// A refused connection is passed over too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	cli2, err := gateway.New([]string{refused, c.Endpoints()[0]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli2.Close()
	if _, err := get(cli2, "k"); err != nil {
		t.Fatal(err)
	}
	// With no member to answer, the error names each.
	cli3, err := gateway.New([]string{refused, broken}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli3.Close()
	if _, err := get(cli3, "k"); err == nil {
		t.Fatal("a request without a member succeeded")
	} else if s := err.Error(); !strings.Contains(s, refused) || !strings.Contains(s, broken) {
		t.Errorf("the error %q does not name both members", s)
	}
}

// A member without a leader refuses at once, as unavailable, rather than
// hold the request until its deadline: the client asks for a leader.
func TestNoLeaderFailsFast(t *testing.T) {
	c := etcdtest.Start(t, 3)
	lone := c.Members[2]
	for _, m := range c.Members[:2] {
		m.Kill()
	}
	cli, err := gateway.New([]string{lone.ClientURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var last error
	if !testproc.UntilEvery(3*etcdtest.Election+20*time.Second, 100*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, last = cli.Range(ctx, gateway.RangeRequest{Key: []byte("k")})
		return gateway.IsCode(last, gateway.CodeUnavailable)
	}) {
		t.Fatalf("without quorum: %v, want unavailable", last)
	}
	// The first refusals may be timeouts of requests taken while the
	// member still knew a leader; from now on it knows it has none.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := time.Now()
	_, last = cli.Range(ctx, gateway.RangeRequest{Key: []byte("k")})
	if took := time.Since(begin); !gateway.IsCode(last, gateway.CodeUnavailable) || took > 2*time.Second {
		t.Errorf("a request without a leader: %v after %v, want unavailable at once", last, took)
	}
	var e *gateway.Error
	if !errors.As(last, &e) || e.Status != 503 {
		t.Errorf("the refusal %v is no *Error of HTTP 503", last)
	}
}

// A watch sends the key's changes, a deletion as such, and ends when its
// context does.
func TestWatch(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w, err := cli.Watch(ctx, gateway.WatchRequest{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := w.Next()
	if err != nil || !r.Created {
		t.Fatalf("first message %+v, %v; want the creation", r, err)
	}
	if _, err := cli.Put(ctx, gateway.PutRequest{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Txn(ctx, gateway.TxnRequest{Success: []gateway.RequestOp{{DeleteRange: &gateway.DeleteRangeRequest{Key: []byte("k")}}}}); err != nil {
		t.Fatal(err)
	}
	var got []gateway.Event
	for len(got) < 2 {
		r, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Events...)
	}
	if got[0].Deleted() || string(got[0].Kv.Value) != "v" || !got[1].Deleted() || got[1].Kv.ModRevision <= got[0].Kv.ModRevision {
		t.Errorf("events %+v, want the put of v, then the deletion", got)
	}
	cancel()
	if _, err := w.Next(); err == nil {
		t.Error("the watch goes on after its context ended")
	}
}

// memberID is the id of the member at endpoint, asking it alone.
func memberID(t *testing.T, endpoint string) uint64 {
	t.Helper()
	cli, err := gateway.New([]string{endpoint}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := cli.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Header.MemberID
}

// Requests go to the leader once the client has found it, though it is
// the last endpoint named; and to the new leader after an election.
func TestRequestsGoToTheLeader(t *testing.T) {
	c := etcdtest.Start(t, 3)
	c.WaitServing(20 * time.Second)
	lead := c.Leader()
	var endpoints []string
	for _, m := range c.Members {
		if m != lead {
			endpoints = append(endpoints, m.ClientURL)
		}
	}
	cli, err := gateway.New(append(endpoints, lead.ClientURL), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	servedBy := func() uint64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := cli.Put(ctx, gateway.PutRequest{Key: []byte("k"), Value: []byte("v")})
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.MemberID
	}
	want := memberID(t, lead.ClientURL)
	testproc.Eventually(t, 5*time.Second, func() bool { return servedBy() == want }, "no put was served by the leader")
	for i := range 20 {
		if got := servedBy(); got != want {
			t.Fatalf("put %d served by %x, not the leader %x", i, got, want)
		}
	}

	lead.Stop()
	c.WaitServing(20 * time.Second)
	next := c.Leader()
	want = memberID(t, next.ClientURL)
	testproc.Eventually(t, 10*time.Second, func() bool { return servedBy() == want }, "no put was served by the new leader")
}
