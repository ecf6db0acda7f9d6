package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tether-dev/tether/internal/testproc"
	"github.com/tether-dev/tether/service/lease/gateway"
)

// The cluster serves, survives its leader's death, stops serving without
// quorum and serves again with it; and it is gone when the test ends.
func TestCluster(t *testing.T) {
	var c *Cluster
	t.Run("cluster", func(t *testing.T) {
		c = Start(t, 3)
		cli := c.Client()
		put := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := cli.Put(ctx, gateway.PutRequest{Key: []byte("k"), Value: []byte("v")})
			return err
		}
		if err := put(); err != nil {
			t.Fatal(err)
		}
		old := c.Leader()
		old.Kill()
		if now := c.Leader(); now == old {
			t.Fatalf("the killed member %s still leads", old.Name)
		}
		if err := put(); err != nil {
			t.Fatalf("without the old leader: %v", err)
		}
		// Quorum lost: one member of three left.
		var stopped []*Member
		for _, m := range c.Members {
			if m.Running() && len(stopped) == 0 {
				m.Stop()
				stopped = append(stopped, m)
			}
		}
		if err := put(); err == nil {
			t.Fatal("a put succeeded without quorum")
		}
		for _, m := range append(stopped, old) {
			m.Restart()
		}
		if err := put(); err != nil {
			t.Fatalf("with quorum regained: %v", err)
		}
	})
	for _, m := range c.Members {
		if m.Running() {
			t.Errorf("etcd %s still runs after its test", m.Name)
		}
		select {
		case <-m.done:
		default:
			t.Errorf("etcd %s's process was not waited for", m.Name)
		}
	}
}

// A cut proxy lets nothing through, and a restored one lets all through.
func TestProxy(t *testing.T) {
	c := Start(t, 3)
	p := c.Proxy()
	cli, err := gateway.New(p.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Range(ctx, gateway.RangeRequest{Key: []byte("k")})
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if err := get(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("through a cut proxy: %v, want the deadline exceeded", err)
	}
	p.Restore()
	if !testproc.Until(10*time.Second, func() bool { err = get(); return err == nil }) {
		t.Fatalf("through a restored proxy: %v", err)
	}
}

// Skip is a failure under CI=true.
func TestSkipFailsInCI(t *testing.T) {
	t.Setenv("CI", "true")
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		skipIfMissing(ft, "/nonexistent/etcd")
	}()
	if !ft.fatal || ft.skipped {
		t.Errorf("under CI=true a missing etcd: fatal %v, skipped %v; want a failure", ft.fatal, ft.skipped)
	}
}

type fakeT struct {
	testing.TB
	fatal, skipped bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Fatalf(string, ...any) { f.fatal = true; panic(f) }
func (f *fakeT) Skipf(string, ...any)  { f.skipped = true; panic(f) }
